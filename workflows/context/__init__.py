"""Context: what one model call sends (assembly, context files), the transcript it is rebuilt from (import and export), and compaction."""

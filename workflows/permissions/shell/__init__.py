"""Shell commands read as bash reads them: the tree-sitter parse, the second opinions, and the Bash check."""

"""Claude Code's command line on Mainsail: print mode, stream-json, the Agent SDK's control protocol."""

"""File edits seen from outside the tool: the diff a person approves, and the checkpoints /rewind restores."""

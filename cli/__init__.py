"""The mainsail command line."""

"""The rule language (``Tool(specifier)``) and the one path resolver the rules and the tools share."""

"""The rule language (``Tool(specifier)``), the one path resolver the rules and the tools share, and the host
a ``WebFetch(domain:HOST)`` rule matches."""

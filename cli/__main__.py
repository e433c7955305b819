"""``python -m cli``: the ``mainsail`` command (how a supervised worker starts its children)."""

from cli.main import main

main()

"""``mainsail fsm``: the session machine as a mermaid diagram, from its definition."""

import click

from statemachines import mermaid


@click.command("fsm")
def fsm() -> None:
    """Print the session state machine as a mermaid diagram."""
    click.echo(mermaid())

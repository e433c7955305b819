"""What sessions cost, by token, workspace, model and day, and the budgets that stop new turns.

The figures come from the usage each model call already records (:func:`workflows.commit.charges.charge`
adds every call to a ledger by day in the same commit, :mod:`workflows.store.costs`);
:mod:`workflows.costs.report` groups them and :mod:`workflows.costs.budgets` holds a token or workspace
to a limit.
"""

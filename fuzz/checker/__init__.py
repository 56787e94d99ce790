"""The reference model and the checkers: what the server must answer (model.py), the promises
(invariants.py), the known divergences of real builds (divergences.py), the statistics judge
(server_stats.py), what a cancel group's answers leave possible (cancels.py), and histories judged
as data without a server (history.py, linearize.py)."""

"""The harness every driver shares: the engine (engine.py, with its cancel and share groups in
cancelling.py and sharing.py) asks the reference model, sends through the clients (client.py),
collects and logs; server.py and releases.py start the Triton under test, lag.py measures it."""

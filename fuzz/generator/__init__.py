"""The generator: what clients do. The state machine's rules (machine.py) only choose; steering
(steering.py) and the goals it steers by (coverage.py, edges.py, depth.py) say where to go next."""

"""The hang watchdog: a stage whose ranks stop making progress is ended within two minutes, and the
rank or node that held it up is named (docs/hang-watchdog.md).

Three parts, one per place a stage runs:
- beat (inside every rank, installed by `python -m smoke.watchdog.inrank`, which rank_bind execs):
  a heartbeat file the loops advance, a faulthandler stack dump on SIGUSR1, and on request the torch
  NCCL flight recorder's view of the rank's collectives;
- agent (one per node and step, started by torchrun-node beside torchrun): on request, every local
  rank's process state and stack, and whether this node reaches every peer's agent over TCP;
- monitor (on the batch host, started by job-lib's smoke_stage): watches progress (heartbeats and
  iteration lines), asks for evidence after SMOKE_HANG_AFTER seconds without any, judges it
  (smoke.watchdog.judge), writes hang.json and ends the stage.
Standard library only, but for torch inside the ranks.
"""

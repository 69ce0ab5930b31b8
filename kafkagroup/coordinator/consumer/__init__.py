"""Consumer groups (KIP-848): the coordinator assigns, members reconcile through heartbeats.

``reconcile`` (pure: current + target -> next assignment), ``group`` (group and member bookkeeping),
``target`` (target assignments from the native server assignors), ``regex`` (RE2 subscriptions),
``heartbeat`` (ConsumerGroupHeartbeat and the member timers), ``offsets`` (what offsets, describe and list
need from a consumer group).  Nothing here imports the classic group's modules, nor they this package
(tests/test_layering.py).
"""

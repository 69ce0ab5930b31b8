"""``kafkagroup serve``: the group coordinator on Kafka's wire protocol, for real Kafka clients.

``async with serve(listen="127.0.0.1:0") as server`` runs one node (id 0) on the running loop; its
``server.bootstrap`` goes into any client's ``bootstrap.servers``.  The record log is in memory.
Requires kio (``pip install 'kafkagroup[serve]'``).
"""
from kafkagroup.server.app import SERVER_CONFIG, Server, serve

__all__ = ["serve", "Server", "SERVER_CONFIG"]

"""The architectures: one module per network, each implementing :class:`replica.interface.ReplicaModel`."""

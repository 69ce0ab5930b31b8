"""Drop-in adapters that let the Python Kafka clients use kafkagroup's assignors.

- :mod:`kafkagroup.compat.kafka_python` -- for ``kafka.KafkaConsumer(partition_assignment_strategy=[...])``
  (kafka-python 3.x): range, roundrobin, sticky, cooperative-sticky;
- :mod:`kafkagroup.compat.aiokafka` -- for ``aiokafka.AIOKafkaConsumer(partition_assignment_strategy=[...])``:
  the eager assignors (range, roundrobin, sticky).

Each module imports its client lazily: import only the one you use.
"""

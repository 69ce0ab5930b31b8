"""``python -m kafkagroup ...`` = the ``kafkagroup`` command."""
import sys

from kafkagroup.cli import main

sys.exit(main())

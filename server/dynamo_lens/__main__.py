import sys

from dynamo_lens.cli import main

sys.exit(main())

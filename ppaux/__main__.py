import sys

from ppaux.cli import main

sys.exit(main())

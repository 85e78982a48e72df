import sys

from ppaux.cli.main import main

sys.exit(main())

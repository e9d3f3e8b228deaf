"""`python -m experiments` is the `resharpen` command."""
from resharpen.cli import main

raise SystemExit(main())

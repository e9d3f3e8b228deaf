"""`python -m resharpen` is the `resharpen` command."""
from resharpen.cli import main

raise SystemExit(main())

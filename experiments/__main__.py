"""`python -m experiments` is the `resharpen` command."""
from experiments.cli import main

raise SystemExit(main())

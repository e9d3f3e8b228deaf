"""``resharpen.experiments``: the checkout's ``experiments/`` folder, installed beneath the one import package."""
if __name__ != "resharpen.experiments":  # one import name: not ``experiments`` from the checkout's root
    raise ImportError(f"import this folder as resharpen.experiments, not {__name__} (pip install -e . installs it)")

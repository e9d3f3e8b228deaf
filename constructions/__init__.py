"""``resharpen.constructions``: the checkout's ``constructions/`` folder, installed beneath the one import package."""
if __name__ != "resharpen.constructions":  # one import name: not ``constructions`` from the checkout's root
    raise ImportError(f"import this folder as resharpen.constructions, not {__name__} (pip install -e . installs it)")

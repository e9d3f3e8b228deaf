"""``resharpen.theory``: the checkout's ``theory/`` folder, installed beneath the one import package."""
if __name__ != "resharpen.theory":  # one import name: not ``theory`` from the checkout's root
    raise ImportError(f"import this folder as resharpen.theory, not {__name__} (pip install -e . installs it)")

"""The battery: the package's experiments run on one normalization scheme, a plug-in included,
beside the reference schemes (``resharpen battery``)."""

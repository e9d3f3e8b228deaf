"""A guard for tests that register plug-in schemes and tasks (one module, so every test imports
the same name: ``from registry_guard import restored_registries``)."""
import contextlib
import sys


@contextlib.contextmanager
def restored_registries():
    """Within the block, a test may register plug-in schemes and tasks: afterwards the scheme
    and task registries, the model's layer memo, the plug-in records and the plug-in modules are
    as before, so other tests see the package's own schemes and tasks only."""
    from resharpen.experiments.model import schemes, transformer
    from resharpen.experiments.tasks import registry
    from resharpen.experiments.training import plugins

    tables = (schemes.SCHEMES, registry._BUILDERS, registry.TASKS, transformer._LAYERS,
              plugins._LOADED, plugins._FILE_NAMES)
    saved, modules = [dict(t) for t in tables], set(sys.modules)
    try:
        yield
    finally:
        for live, old in zip(tables, saved):
            live.clear()
            live.update(old)
        for name in set(sys.modules) - modules:
            if name.startswith("resharpen_plugin_"):
                del sys.modules[name]

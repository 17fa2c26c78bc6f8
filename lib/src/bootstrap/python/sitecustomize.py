# sprof's sitecustomize. `sprof record` puts this directory first on the target's PYTHONPATH,
# so the interpreter's `site` module imports this file instead of the user's own sitecustomize.
# It runs the user's sitecustomize (the next one on sys.path) exactly once, as the module
# `sitecustomize`, and then activates sprof's bootstrap when the recorder's environment
# variables are present (see docs/markers.md).
#
# This file must stay valid Python 2.7 syntax: every interpreter the target runs parses it.
# The bootstrap itself needs Python 3.8+; older interpreters only get the chaining.
import os
import sys

# Python 2 empties a module's globals when the module object dies, and replacing
# sys.modules["sitecustomize"] with the user's module drops the last reference to this one.
_sprof_module = sys.modules.get(__name__)


def _sprof_here():
    return os.path.dirname(os.path.abspath(__file__))


def _sprof_is_here(entry, here):
    try:
        return os.path.samefile(entry or os.curdir, here)
    except Exception:
        return False


def _sprof_importlib():
    """importlib's machinery without importing importlib.util, which pulls in contextlib,
    collections and functools: several milliseconds of every interpreter start."""
    try:
        import _frozen_importlib
        import _frozen_importlib_external
        _frozen_importlib.module_from_spec
        _frozen_importlib_external.spec_from_file_location
        _frozen_importlib_external.PathFinder
        return _frozen_importlib, _frozen_importlib_external
    except (ImportError, AttributeError):
        import importlib.machinery
        import importlib.util
        return importlib.util, importlib.machinery


def _sprof_run_user_sitecustomize(here):
    """Find the sitecustomize that would have been imported without sprof and run it as
    `sitecustomize`. Exceptions from it propagate to the caller."""
    rest = [p for p in sys.path if not _sprof_is_here(p, here)]
    me = sys.modules.get("sitecustomize")
    if sys.version_info[0] >= 3:
        bootstrap, external = _sprof_importlib()
        spec = external.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        module = bootstrap.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            # Like a failed import: the name is not left bound to a half-run module.
            if sys.modules.get("sitecustomize") is module:
                if me is not None:
                    sys.modules["sitecustomize"] = me
                else:
                    del sys.modules["sitecustomize"]
            raise
    else:
        import imp
        try:
            found = imp.find_module("sitecustomize", rest)
        except ImportError:
            return
        handle = found[0]
        try:
            # imp.load_module re-runs an existing module object in place; start from a fresh one.
            sys.modules.pop("sitecustomize", None)
            try:
                imp.load_module("sitecustomize", *found)
            except BaseException:
                if me is not None:
                    sys.modules["sitecustomize"] = me
                raise
        finally:
            if handle is not None:
                handle.close()


def _sprof_activate(here):
    if sys.version_info < (3, 8):
        return
    env = os.environ
    if not (env.get("SPROF_MARKER_FD") or env.get("SPROF_MARKER_PATH")):
        return
    try:
        # Our own copy of the package, by path: importing `sprof` activates the bootstrap, and
        # the program's later `import sprof` gets this module from sys.modules.
        bootstrap, external = _sprof_importlib()
        spec_from_file_location = getattr(external, "spec_from_file_location", None)
        if spec_from_file_location is None:  # the importlib.util fallback
            spec_from_file_location = bootstrap.spec_from_file_location
        init = os.path.join(here, "sprof", "__init__.py")
        spec = spec_from_file_location(
            "sprof", init, submodule_search_locations=[os.path.join(here, "sprof")])
        package = bootstrap.module_from_spec(spec)
        sys.modules["sprof"] = package
        try:
            spec.loader.exec_module(package)
        except BaseException:
            del sys.modules["sprof"]
            raise
    except Exception as e:  # the bootstrap never breaks the target
        try:
            sys.stderr.write("sprof: bootstrap disabled: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass


def _sprof_main():
    user_error = None
    try:
        here = _sprof_here()
        try:
            _sprof_run_user_sitecustomize(here)
        except Exception as e:
            # Re-raised below, after the bootstrap, so `site` reports it exactly as it would have.
            user_error = e
        _sprof_activate(here)
    except KeyboardInterrupt:
        _sprof_die_of_sigint()
        raise
    if user_error is not None:
        raise user_error


def _sprof_die_of_sigint():
    # ^C while the bootstrap (or the sitecustomize it runs first) loads: end as Python 3.8+ ends on an uncaught KeyboardInterrupt
    # (killed by SIGINT, status 128+2), not with a traceback through sprof's files.
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


_sprof_main()

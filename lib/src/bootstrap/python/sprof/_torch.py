"""Automatic step, mode and phase detection for PyTorch, and DataLoader lanes.

Loaded by a one-shot import hook (_bootstrap.TorchImportHook): nothing happens, and this module
is not even imported, unless the program imports torch. The rules (docs/python-api.md,
"Automatic PyTorch detection"):

- The *root* is the module whose call is outermost: called while no other module call is
  running, and owning parameters (so a loss module such as nn.CrossEntropyLoss() is not a root).
  Roots are found by global forward hooks ("discovery"); once found, the root's class gets a thin
  __call__ wrapper and the global hooks are removed again, because global hooks push every module
  call in the program onto torch's slow path (about 2 us per call on torch 1.13).
- A root forward in training mode starts a TRAIN step unless one is open; its end is the step's
  FORWARD_PASS_END. The outermost optimizer.step() (or GradScaler.step()) ends the TRAIN step;
  one that runs while no TRAIN step is open starts one first.
- A root forward in eval mode outside a TRAIN step is one step of its own: EVAL when the process
  has created an optimizer (a training job validating), else PREDICT. FORWARD_PASS_END and
  STEP_END are the end of the forward.
- Once the program uses the explicit step API, these rules stand down (the DataLoader lanes stay).
"""
import functools
import sys

from . import _channel as ch
from . import _impl

_disabled = False        # a runtime failure turned the hooks into pass-throughs
_active_root = None      # the module whose outermost call is running (any thread)
_root_opened = 0         # mode of the step the running root call opened (EVAL/PREDICT), else 0
_disc_module = None      # the root adopted by discovery whose call is still running
_disc_handles = None     # global hook handles while discovery is armed
_disc_budget = None      # root calls a re-armed discovery may wait for a new root (None: no limit)
_register_pre = None     # torch.nn.modules.module.register_module_forward_pre_hook
_register_post = None
_call_codes = frozenset()  # code objects of nn.Module's call machinery (nesting test)
_in_train_call = False
_optimizers_seen = False
_step_depth = 0          # nesting of optimizer.step()/GradScaler.step() calls
_next_iter_id = 0


def _fail(error):
    """A failure inside a hook at run time: report once, then stand aside for good."""
    global _disabled
    _disabled = True
    ch.warn_once("torch-runtime", "PyTorch step detection stopped after an internal error: %s: %s"
                 % (type(error).__name__, error))


# ---------------------------------------------------------------------------------------------
# Entry points (the import hook itself is in _bootstrap, so that this module is only loaded by
# programs that import torch)


def after_import(torch, late=False):
    """torch has just been imported (late: before the bootstrap ran, objects may exist)."""
    failures = []
    for name, patch in (("modules", _patch_modules), ("optimizer", _patch_optimizer),
                        ("dataloader", _patch_dataloader)):
        try:
            patch(torch, late)
        except Exception as e:
            failures.append("%s: %s: %s" % (name, type(e).__name__, e))
    try:
        _impl.framework("pytorch", str(getattr(torch, "__version__", "unknown")))
    except Exception as e:
        failures.append("version: %s: %s" % (type(e).__name__, e))
    if failures:
        ch.warn_once("torch", "PyTorch instrumentation incomplete (%s); the sprof API still works"
                     % "; ".join(failures))


def after_fork_in_child():
    global _active_root, _root_opened, _disc_module, _step_depth, _in_train_call
    _active_root = _disc_module = None
    _root_opened = _step_depth = 0
    _in_train_call = False


# ---------------------------------------------------------------------------------------------
# Modules: roots, modes, FORWARD_PASS_END, EVAL/PREDICT steps


def _root_begin(module):
    global _root_opened
    _root_opened = 0
    if _disabled or _impl.explicit or not _impl.active:
        return
    try:
        t = ch.mono()
        if module.training:
            if _impl.open_mode != _impl.TRAIN:
                _impl.begin_step(_impl.TRAIN, t=t)
        elif _impl.open_mode != _impl.TRAIN:
            m = _impl.EVAL if _optimizers_seen else _impl.PREDICT
            _impl.begin_step(m, t=t)
            _root_opened = m
    except Exception as e:
        _fail(e)


def _root_end(module):
    global _root_opened
    opened, _root_opened = _root_opened, 0
    if _disabled or _impl.explicit or not _impl.active:
        return
    try:
        t = ch.mono()
        if opened:
            if _impl.open_mode == opened:
                _impl.forward_pass_end(t)
                _impl.end_step(t)
        elif _impl.open_mode == _impl.TRAIN:
            _impl.forward_pass_end(t)
    except Exception as e:
        _fail(e)


def _wrap_call(original):
    def __call__(self, *args, **kwargs):
        global _active_root
        if _active_root is not None or _disabled:
            if _disc_module is None or _active_root is not self or _disabled:
                return original(self, *args, **kwargs)
            # The discovery call of this very module raised before its post hook ran.
            _discovery_done()
        _active_root = self
        if _disc_budget is not None:
            _spend_discovery_budget()
        _root_begin(self)
        try:
            return original(self, *args, **kwargs)
        finally:
            _active_root = None
            _root_end(self)

    __call__._sprof_original = original
    return __call__


_wrapper_code = _wrap_call(None).__code__


def _patch_class(cls):
    current = cls.__call__
    if getattr(current, "_sprof_original", None) is not None:
        return
    cls.__call__ = _wrap_call(current)


def _is_top_level():
    """No module call below us on this thread's stack, other than the one running the hook."""
    f = sys._getframe(2)  # 0: here, 1: the hook, 2: torch's call machinery of this module
    while f is not None and f.f_code in _call_codes:
        f = f.f_back
    while f is not None:
        if f.f_code in _call_codes or f.f_code is _wrapper_code:
            return False
        f = f.f_back
    return True


def _has_parameters(module):
    for _ in module.parameters():
        return True
    return False


def _discovery_pre(module, inputs):
    global _active_root, _disc_module
    if _active_root is not None or _disabled:
        return None
    try:
        if not _is_top_level() or not _has_parameters(module):
            return None
        _patch_class(type(module))
    except Exception as e:
        _fail(e)
        return None
    _active_root = _disc_module = module
    _root_begin(module)
    return None


def _discovery_post(module, inputs, output):
    global _active_root
    if module is _disc_module and _active_root is module:
        _active_root = None
        _discovery_done()
        _root_end(module)
    return None


def _spend_discovery_budget():
    global _disc_budget
    _disc_budget -= 1
    if _disc_budget <= 0 and _disc_module is None:
        _discovery_done()


def _discovery_done():
    """The adopted root's class now carries the wrapper: stop paying for global hooks."""
    global _disc_module, _disc_handles, _disc_budget
    _disc_module = None
    _disc_budget = None
    handles, _disc_handles = _disc_handles, None
    if handles:
        try:
            for h in handles:
                h.remove()
        except Exception as e:
            _fail(e)


def _arm_discovery(budget=None):
    global _disc_handles, _disc_budget
    if _disc_handles is not None or _disabled:
        return
    _disc_handles = (_register_pre(_discovery_pre), _register_post(_discovery_post))
    _disc_budget = budget


def _wrap_train(original):
    @functools.wraps(original)
    def train(self, *args, **kwargs):
        # model.train()/model.eval() on a module whose class is no root yet: look for roots
        # again (a second model, say, evaluated after training the first).
        global _in_train_call
        if _in_train_call:
            return original(self, *args, **kwargs)
        _in_train_call = True
        try:
            return original(self, *args, **kwargs)
        finally:
            _in_train_call = False
            if not _disabled and getattr(type(self).__call__, "_sprof_original", None) is None:
                try:
                    # Global hooks slow every module call down: if the known roots keep running
                    # and no new one shows up, stop looking after a few of their calls.
                    _arm_discovery(budget=3)
                except Exception as e:
                    _fail(e)

    train._sprof_original = original
    return train


def _with_nested(code):
    """The code object and those of the functions defined in it: torch 2's _call_impl runs the
    hooks from a nested inner(), which is call machinery too."""
    out = [code]
    for const in code.co_consts:
        if isinstance(const, type(code)):
            out += _with_nested(const)
    return out


def _patch_modules(torch, late):
    global _register_pre, _register_post, _call_codes
    module_mod = sys.modules["torch.nn.modules.module"]
    Module = module_mod.Module
    register_pre = module_mod.register_module_forward_pre_hook
    register_post = module_mod.register_module_forward_hook
    codes = set()
    for name in ("_call_impl", "_wrapped_call_impl", "__call__", "_slow_forward"):
        code = getattr(getattr(Module, name, None), "__code__", None)
        if code is not None:
            codes.update(_with_nested(code))
    if not codes:
        raise AttributeError("torch.nn.Module has no _call_impl")
    train = Module.train
    _register_pre, _register_post, _call_codes = register_pre, register_post, frozenset(codes)
    if getattr(train, "_sprof_original", None) is None:
        Module.train = _wrap_train(train)
    _arm_discovery()


# ---------------------------------------------------------------------------------------------
# Optimizers: TRAIN step ends


def _step_begin():
    if _disabled or _impl.explicit or not _impl.active:
        return
    try:
        if _impl.open_mode != _impl.TRAIN:
            _impl.begin_step(_impl.TRAIN)
    except Exception as e:
        _fail(e)


def _step_end():
    if _disabled or _impl.explicit or not _impl.active:
        return
    try:
        if _impl.open_mode == _impl.TRAIN:
            _impl.end_step()
    except Exception as e:
        _fail(e)


def _wrap_step(original):
    # A wrapper rather than torch 2's global optimizer step hooks: those skip the post hook when
    # step() raises and run twice for a subclass whose step() calls super().step(); try/finally
    # and one depth counter behave the same on every torch version.
    @functools.wraps(original)
    def step(self, *args, **kwargs):
        global _step_depth
        if _step_depth:
            return original(self, *args, **kwargs)
        _step_depth = 1
        _step_begin()
        try:
            return original(self, *args, **kwargs)
        finally:
            _step_depth = 0
            _step_end()

    step._sprof_original = original
    return step


def _wrap_class_step(cls):
    current = cls.step
    if getattr(current, "_sprof_original", None) is None:
        cls.step = _wrap_step(current)


def _note_optimizer(optimizer):
    global _optimizers_seen
    _optimizers_seen = True
    if _disabled:
        return
    try:
        _wrap_class_step(type(optimizer))
    except Exception as e:
        _fail(e)


def _wrap_after(original, after):
    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        after(self)
        return result

    wrapper._sprof_original = original
    return wrapper


def _all_subclasses(cls):
    seen, todo = [], [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen


def _patch_optimizer(torch, late):
    Optimizer = sys.modules["torch.optim.optimizer"].Optimizer
    init, setstate = Optimizer.__init__, Optimizer.__setstate__
    scalers = []
    for module_name in ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler"):
        scaler = getattr(sys.modules.get(module_name), "GradScaler", None)
        if scaler is not None and "step" in scaler.__dict__:
            scalers.append(scaler)
    if getattr(init, "_sprof_original", None) is None:
        Optimizer.__init__ = _wrap_after(init, _note_optimizer)
        Optimizer.__setstate__ = _wrap_after(setstate, _note_optimizer)
    for scaler in scalers:
        _wrap_class_step(scaler)
    if late:  # optimizers may exist already: wrap every optimizer class there is
        for cls in _all_subclasses(Optimizer):
            if "step" in cls.__dict__:
                _wrap_class_step(cls)


# ---------------------------------------------------------------------------------------------
# DataLoader lanes


def _dl_next(iterator, t0, outcome):
    try:
        ch.defer(b"dln %d %s %d %d %s\n" % (
            ch.mono(), ch.who(), t0, iterator.__dict__.get("_sprof_id", 0), outcome))
    except Exception as e:
        _fail(e)


def _wrap_next(original):
    @functools.wraps(original)
    def __next__(self):
        t0 = ch.mono()
        outcome = b"error"
        try:
            item = original(self)
            outcome = b"ok"
            return item
        except StopIteration:
            outcome = b"stop"
            raise
        finally:
            if _impl.active:
                _dl_next(self, t0, outcome)

    __next__._sprof_original = original
    return __next__


def _wrap_iter_init(original, name):
    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        global _next_iter_id
        t0 = ch.mono()
        original(self, *args, **kwargs)
        if not _impl.active:
            return
        try:
            _next_iter_id += 1
            self._sprof_id = _next_iter_id
            ch.send(b"dli %d %s %d %d %s %d %d\n" % (
                ch.mono(), ch.who(), t0, _next_iter_id, name,
                int(getattr(self, "_num_workers", 0)),
                1 if getattr(self, "_pin_memory", False) else 0))
        except Exception as e:
            _fail(e)

    __init__._sprof_original = original
    return __init__


def _worker_event(kind, worker_id):
    try:
        import os
        ch.send(b"%s %d %s %d %d\n" % (kind, ch.mono(), ch.who(), worker_id, os.getppid()))
    except Exception as e:
        _fail(e)


def _wrap_worker_loop(original, worker_id_index):
    @functools.wraps(original)
    def _worker_loop(*args, **kwargs):
        worker_id = kwargs.get("worker_id")
        if worker_id is None and worker_id_index < len(args):
            worker_id = args[worker_id_index]
        if not isinstance(worker_id, int):
            worker_id = -1
        if _impl.active:
            _worker_event(b"wstart", worker_id)
        step_fn = sys.modules.get(__package__ + "._step_fn")
        if step_fn is not None:
            step_fn.stop_search()  # a worker runs no training steps
        try:
            return original(*args, **kwargs)
        finally:
            if _impl.active:
                _worker_event(b"wstop", worker_id)

    _worker_loop._sprof_original = original
    return _worker_loop


def _patch_dataloader(torch, late):
    import inspect
    dl = sys.modules["torch.utils.data.dataloader"]
    worker = sys.modules["torch.utils.data._utils.worker"]
    base = dl._BaseDataLoaderIter
    iters = [(cls, cls.__dict__["__init__"]) for cls in
             (dl._SingleProcessDataLoaderIter, dl._MultiProcessingDataLoaderIter)]
    loop = worker._worker_loop
    worker_id_index = list(inspect.signature(loop).parameters).index("worker_id")
    next_ = base.__next__
    if getattr(next_, "_sprof_original", None) is not None:
        return
    base.__next__ = _wrap_next(next_)
    for cls, init in iters:
        cls.__init__ = _wrap_iter_init(init, cls.__name__.encode())
    worker._worker_loop = _wrap_worker_loop(loop, worker_id_index)

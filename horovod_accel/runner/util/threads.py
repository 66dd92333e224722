"""`horovod.runner.util.threads`: upstream's thread helpers with the same
names, signatures and behaviour (`in_thread`, `on_event`,
`execute_function_multithreaded`; horovod 0.28.1).

Scripts and upstream's own test utilities (test/utils/common.py) import
these; the launcher itself does not need them.
"""
import queue
import threading


def _check_args(args):
    if not isinstance(args, tuple):
        raise ValueError(f"args must be a tuple, not {type(args)}, for a single argument use "
                         "(arg,)")


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Starts `target(*args)` on a new thread (a daemon thread unless
    daemon=False) and returns the started thread.

    silent=True swallows whatever `target` raises (the thread just ends);
    otherwise an exception goes to threading.excepthook, as for any thread.
    Raises ValueError if `args` is not a tuple.
    """
    _check_args(args)
    if silent:
        def fn(*a):
            try:
                target(*a)
            except BaseException:  # noqa: BLE001 - what silent means (upstream: bare except)
                pass
    else:
        fn = target
    thread = threading.Thread(target=fn, args=args, name=name, daemon=daemon)
    thread.start()
    return thread


def on_event(event, func, args=(), stop=None, check_stop_interval_s=1.0, daemon=True,
             silent=False):
    """Runs `func(*args)` on a new thread once `event` is set; returns the thread.

    With a `stop` event the thread checks it every `check_stop_interval_s`
    seconds and ends without calling func once stop is set. A non-daemon
    thread needs a stop event (else it could keep the process alive forever):
    ValueError. silent as in in_thread.
    """
    if event is None:
        raise ValueError("Event must not be None")
    _check_args(args)
    if stop is None:
        if not daemon:
            raise ValueError("Stop event must be given for non-daemon event thread")

        def fn():
            event.wait()
            func(*args)
    else:
        def fn():
            while not event.is_set() and not stop.is_set():
                event.wait(timeout=check_stop_interval_s)
            if not stop.is_set():
                func(*args)
    return in_thread(fn, daemon=daemon, silent=silent)


def execute_function_multithreaded(fn, args_list, block_until_all_done=True,
                                   max_concurrent_executions=1000):
    """Calls `fn(*args)` for every `args` (a list or tuple) in `args_list`, on
    up to `max_concurrent_executions` threads that take the calls in order.

    block_until_all_done=True: waits (interruptibly, e.g. by Ctrl-C) and
    returns {index in args_list: result}; if any call raised, its exception
    is reported by threading.excepthook and RuntimeError('Some threads for
    func ... did not complete successfully.') is raised here, with the first
    such exception as its __cause__ (upstream raises the same error without a
    cause). block_until_all_done=False: the calls run on non-daemon threads
    (the interpreter waits for them at exit) and None is returned.

    Unlike upstream, the entries of args_list are not modified (upstream
    appends each entry's index to it, so it needs lists).
    """
    work = queue.Queue()
    for index, args in enumerate(args_list):
        work.put((index, tuple(args)))
    total = work.qsize()
    results = {}
    errors = []
    lock = threading.Lock()

    def worker():
        while True:
            try:
                index, args = work.get_nowait()
            except queue.Empty:
                return
            try:
                value = fn(*args)
            except BaseException as e:  # noqa: BLE001 - recorded, then the thread ends as upstream's
                with lock:
                    errors.append(e)
                raise
            with lock:
                results[index] = value

    n_threads = min(max_concurrent_executions, total)
    threads = [in_thread(worker, daemon=not block_until_all_done) for _ in range(n_threads)]
    if not block_until_all_done:
        return None
    # join() with a timeout, in a loop, so a signal (Ctrl-C) can interrupt the wait.
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(0.1)
    if len(results) != total:
        name = getattr(fn, "__name__", repr(fn))
        raise RuntimeError(f"Some threads for func {name} did not complete successfully.") \
            from (errors[0] if errors else None)
    return results

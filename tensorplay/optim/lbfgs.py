"""``LBFGS``: limited-memory BFGS with an optional strong-Wolfe line search
(PyTorch's ``torch.optim.LBFGS``, itself a port of minFunc).

The algorithm works on one flat vector holding every parameter (numpy arrays of
the parameters' dtype: dot products and scalars stay in that dtype, as PyTorch's
0-d tensors do).  The state lives under the first parameter, as in PyTorch:
``func_evals``, ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``,
``H_diag``, ``prev_flat_grad``, ``prev_loss`` (vectors as Tensors, scalars as
Python floats), so ``state_dict()`` saves and resumes a run.
"""
import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import bump
from tensorplay.autograd.grad_mode import enable_grad, no_grad
from tensorplay.optim.optimizer import Optimizer, _check_lr, _value, _writable

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to
    ``bounds`` (default [min(x1, x2), max(x1, x2)]); the midpoint when the cubic
    has no real minimiser (minFunc's polyinterp, two points)."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Line search along ``d`` from step ``t`` for a point that satisfies the strong
    Wolfe conditions (bracketing, then zoom by cubic interpolation).

    Returns ``(f_new, g_new, t, ls_func_evals)``.
    """
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # interpolate (extrapolation between 1.01 t and 10 t)
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:                           # reached max number of iterations
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point satisfies the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # not enough progress: move t away from the bracket's ends
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos] = t                   # Armijo fails or not lower
            bracket_f[high_pos] = f_new
            bracket_g[high_pos] = g_new.copy()
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True                         # Wolfe conditions satisfied
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]   # old high becomes new low
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos] = t
            bracket_f[low_pos] = f_new
            bracket_g[low_pos] = g_new.copy()
            bracket_gtd[low_pos] = gtd_new
    t = bracket[low_pos]
    return bracket_f[low_pos], bracket_g[low_pos], t, ls_func_evals


def _arr(x):
    return None if x is None else x._data


def _tensor(x):
    return None if x is None else Tensor._wrap(x)


class LBFGS(Optimizer):
    r"""L-BFGS (PyTorch's ``torch.optim.LBFGS``, after minFunc).

    Every ``step(closure)`` runs up to ``max_iter`` iterations: the two-loop
    recursion over the last ``history_size`` (s, y) pairs gives a direction ``d``;
    the parameters move by ``t * d`` with ``t = lr`` (the first iteration ever:
    ``min(1, 1 / sum|g|) * lr``), or with the step a strong-Wolfe line search finds.

    Args:
        params (iterable): tensors (one group only).
        lr (float, optional): learning rate (default 1).
        max_iter (int, optional): iterations per ``step`` (default 20).
        max_eval (int, optional): function evaluations per ``step`` (default
            ``max_iter * 5 // 4``).
        tolerance_grad (float, optional): stop when ``max|g| <= tolerance_grad``
            (default 1e-7).
        tolerance_change (float, optional): stop when the step or the change of
            the loss is below it (default 1e-9).
        history_size (int, optional): update history kept (default 100).
        line_search_fn (str, optional): None or ``"strong_wolfe"``.

    Raises:
        ValueError: a negative lr; more than one parameter group; an unknown
            ``line_search_fn`` (at construction; PyTorch raises a RuntimeError at
            the first step).
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        _check_lr(lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def __setstate__(self, state):
        super().__setstate__(state)
        self._params = self.param_groups[0]["params"]

    # ------------------------------------------------------------ flat views
    def _gather_flat_grad(self):
        views = []
        for p in self._params:
            g = p.grad
            if g is None:
                views.append(np.zeros(p._data.size, p._data.dtype))
            else:
                views.append(g._data.reshape(-1))
        return np.concatenate(views) if len(views) > 1 else np.array(views[0], copy=True)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            pd = p._data
            n = pd.size
            pd += (update[offset:offset + n] * step_size).reshape(pd.shape)
            bump(p, "add_")
            offset += n

    def _clone_param(self):
        return [np.array(p._data, copy=True) for p in self._params]

    def _set_param(self, params_data):
        for p, pdata in zip(self._params, params_data):
            np.copyto(p._data, pdata)
            bump(p, "copy_")

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # ------------------------------------------------------------ step
    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations.

        Args:
            closure (callable): re-evaluates the model (zeroing and recomputing the
                gradients) and returns the loss; required, called with grad mode on.

        Returns:
            The loss the first closure call returned.

        Raises:
            TypeError: no closure.
        """
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step() requires a closure: a callable that "
                            "re-evaluates the model (zero_grad, forward, backward) and "
                            "returns the loss")
        for p in self._params:
            _writable(p, "LBFGS")

        def closure_grad():
            with enable_grad():
                return closure()

        with no_grad():
            return self._step(closure_grad)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = _value(group["lr"])
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        opt_cond = np.abs(flat_grad).max() <= tolerance_grad
        if opt_cond:                                # optimal condition
            return orig_loss

        d = _arr(state.get("d"))
        t = state.get("t")
        old_dirs = [_arr(v) for v in state.get("old_dirs") or []]
        old_stps = [_arr(v) for v in state.get("old_stps") or []]
        ro = list(state.get("ro") or [])
        H_diag = state.get("H_diag")
        prev_flat_grad = _arr(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        dtype = flat_grad.dtype.type

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # compute the direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad      # update memory
                s = d * dtype(t)
                ys = y.dot(s)                       # y' s
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(dtype(1.0) / ys)
                    H_diag = ys / y.dot(y)          # (y' y)
                num_old = len(old_dirs)
                al = [None] * num_old
                q = -flat_grad                      # two-loop recursion
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q -= old_dirs[i] * al[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += old_stps[i] * (al[i] - be_i)
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            # the step length
            if state["n_iter"] == 1:
                t = min(1.0, dtype(1.0) / np.abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)                  # directional derivative
            if gtd > -tolerance_change:             # below the tolerance
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)                # fixed-step update
                if n_iter != max_iter:
                    # re-evaluate unless this is the last iteration (the caller
                    # is not expected to need the loss after it)
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # stopping conditions
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break                               # lack of progress
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = _tensor(d)
        state["t"] = float(t)
        state["old_dirs"] = [_tensor(v) for v in old_dirs]
        state["old_stps"] = [_tensor(v) for v in old_stps]
        state["ro"] = [float(v) for v in ro]
        state["H_diag"] = float(H_diag)
        state["prev_flat_grad"] = _tensor(prev_flat_grad)
        state["prev_loss"] = prev_loss
        return orig_loss

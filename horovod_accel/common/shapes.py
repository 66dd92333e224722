"""Output shapes every framework adapter computes the same way."""


def scattered_rows(d0, set_size, set_rank):
    """Rows of a reducescatter of `d0` rows that set rank `set_rank` of a set
    of `set_size` ranks receives: d0 // set_size, plus one for the lowest
    d0 % set_size ranks (upstream's split). Also the output shape of the
    traced ops (torch.compile, jax.jit), which must know it before running."""
    return d0 // set_size + (1 if set_rank < d0 % set_size else 0)

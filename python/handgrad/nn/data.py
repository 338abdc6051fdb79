"""The repeated-sequence task of "What Attention Computes" (nn/data.h): batches and split losses."""

from .. import _C

__all__ = ["repeated_batch", "split_losses", "SplitLosses", "accuracy_per_position"]


def repeated_batch(batch_size, num_steps, vocab, Lmin, Lmax, generator=None, device=None):
    """Random patterns of length Lmin..Lmax, tiled to num_steps tokens: (x, L) with x int64
    (batch_size, num_steps) and L int64 (batch_size,). Drawn from `generator` (default: the one
    hg.manual_seed reseeds), on the host, so a seed gives the same tokens on every device."""
    from .modules import _default_generator
    return _C.nn.repeated_batch(batch_size, num_steps, vocab, Lmin, Lmax, _default_generator(generator),
                                device or "cpu")


class SplitLosses:
    """split_losses' result. Unpacks as the text's (first, rep, loss): the first-copy and the
    later-copy cross-entropy (0-d float64 tensors, not recorded) and the mean over all targets
    (differentiable: the training loss). Also later_acc (argmax accuracy on later copies, a
    float) and n_first, n_later (how many targets each mean is over; a mean over none is NaN)."""

    def __init__(self, r):
        from .. import float64, tensor
        self.first = tensor(r.first, dtype=float64)
        self.later = tensor(r.later, dtype=float64)
        self.loss = r.loss
        self.later_acc = r.later_acc
        self.n_first = r.n_first
        self.n_later = r.n_later

    def __iter__(self):
        return iter((self.first, self.later, self.loss))

    def __repr__(self):
        return (f"SplitLosses(first={self.first.item():.4f}, later={self.later.item():.4f}, "
                f"loss={self.loss.item():.4f}, later_acc={self.later_acc:.4f})")


def split_losses(logits, Y, L):
    """Next-token cross-entropy split by target position t = 1..T (1-based): the first copy
    (t < L) and later copies (t >= L), and the mean over all targets. logits (B, T, V), Y int64
    (B, T), L int64 (B,)."""
    return SplitLosses(_C.nn.split_losses(logits, Y, L))


def accuracy_per_position(logits, Y):
    """The accuracy of argmax(logits) at each target position, a list of T floats."""
    return _C.nn.accuracy_per_position(logits, Y)

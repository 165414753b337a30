import numpy as np
import pytest

from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.matrix import SignatureMatrix, pack_bits


def test_pack_bits():
    rng = np.random.default_rng(1)
    for n in (0, 1, 63, 64, 65, 200):
        mask = rng.random(n) < 0.5
        words = pack_bits(mask)
        assert words.dtype == np.uint64 and words.shape == ((n + 63) // 64,)
        assert [bool((int(words[i >> 6]) >> (i & 63)) & 1) for i in range(n)] == mask.tolist()
        assert sum(bin(int(w)).count("1") for w in words) == int(mask.sum())


def test_matrix_is_the_transpose_of_the_signatures():
    params = BloomParams(m=70, k=2, p=2)
    rng = np.random.default_rng(2)
    n = 150
    bits = rng.random((n, params.n_bits)) < 0.1
    signatures = np.stack([pack_bits(b) for b in bits])
    matrix = SignatureMatrix.from_signatures(signatures, params)
    assert matrix.rows.shape == (params.n_bits, (n + 63) // 64) and matrix.n_columns == n
    for j in range(params.n_bits):
        assert np.array_equal(matrix.rows[j], pack_bits(bits[:, j]))
    with pytest.raises(ValueError):
        SignatureMatrix.from_signatures(signatures[:, :1], params)

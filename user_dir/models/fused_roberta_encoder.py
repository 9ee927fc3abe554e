"""fairseq's RoBERTa encoder with a faster forward: same modules, parameters and checkpoints.

fairseq's TransformerEncoder runs time-major (T x B x C) through torch's
multi_head_attention_forward: three separate Q/K/V projections, copies to split and merge the heads
around attention, a `has_pads` check that waits for the GPU in every layer, and separate kernels
for each bias, GELU, dropout, residual add and LayerNorm. This forward runs batch-major, projects
Q, K and V with one GEMM whose output feeds scaled_dot_product_attention as views, adds biases
inside the GEMMs, and (``compiled``) runs each layer through torch.compile so that bias+GELU and
dropout+residual+LayerNorm become single kernels. It need not wait for the GPU at all: told by
the caller whether the batch has padding (``has_padding``, which the masked-LM batches know on
the host), it checks no tensor for it, and the LM head also takes the masked tokens as flat
positions, gathered at a size known on the host, where a boolean mask has a data-dependent one.

Compiled layers see a few static shapes only. Batches of real data vary in length (blocks of
complete sentences, `sample_break_mode: complete`), and torch.compile, given a second length,
given a second shape (another length or batch size), recompiles the layer with symbolic shapes,
whose step ran at 60% of the static one's speed on an H100 (roberta-base, 32 x 512,
scripts/benchmark_encoder.py). So the compiled path pads each batch to a multiple of
LENGTH_BUCKET tokens (masked like any padding, cut off again after the layers: the outputs at
real positions do not change) and compiles with dynamic=False: at most tokens_per_sample /
LENGTH_BUCKET lengths, each compiled once as a static graph.

``unpadded`` runs the fused layers on the real tokens only: the batch's tokens are gathered into
one N x C matrix, every projection, GELU, dropout, residual and LayerNorm runs on those N rows and
only attention sees rows of a batch: the rows sorted by length and cut into groups (RealTokens),
each group scattered into its own g x L layout (L its longest row), masked where shorter rows end,
gathered back. A batch drawn at random from sentences of varied lengths, as fine-tuning draws them,
is as long as its longest row (NCBI-disease's batches of 32: half padding, three quarters of the
attention scores); the GEMMs then do the work of the real tokens only, and attention little more.
Finding the real tokens takes one wait for the GPU per batch (their lengths); features at padding
positions are zeros.

A caller that reads the features of some positions only says which (``features_at``, a B x T
mask): the unpadded route then runs the last layer's attention output projection, feed-forward
and LayerNorms on those tokens only (its attention on every token, as every layer below), and the
features elsewhere are zeros. A sentence classification head (fairseq's
RobertaClassificationHead) reads the first position: called with a head of that kind
(``classification_head_name``, no ``return_all_hiddens``), the model asks for it
(_real_tokens.sentence_heads_read_first_position); sequence labelling reads the tagged positions
(user_dir/models/token_classification_head.py); fairseq's own encoder takes and ignores the mask.

Two speed options ride on it (docs/speed.md, "Speed"): ``cuda_graphs`` replays each compiled
layer as a CUDA graph, ``float8`` runs the four projections as FP8 GEMMs (_float8.py); where
either cannot run, _encoder_levers.py refuses it in one line.

It only replaces forward code: ``use_fused_encoder`` switches an existing RobertaEncoder's class
to FusedRobertaEncoder, which reads the parameters of fairseq's own submodules. State dicts,
parameter names and checkpoints are exactly stock fairseq's, in both directions. Returned hidden
states keep fairseq's T x B x C shapes (as views of the batch-major tensors).
"""

import functools
import logging

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from fairseq.models.roberta.model import RobertaEncoder

from user_dir.models._encoder_levers import check_levers
from user_dir.models._float8 import float8_linear
from user_dir.models._real_tokens import RealTokens, attend, sentence_heads_read_first_position

logger = logging.getLogger(__name__)

IMPLEMENTATIONS = ("fairseq", "fused", "compiled", "unpadded")
# The compiled layers run on lengths that are multiples of this (one static graph each).
LENGTH_BUCKET = 64


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """fairseq's FairseqDropout: nothing at all when p is 0 or in inference. On the CPU its mask
    comes from uniforms: torch's bernoulli_ there takes twice as long as rand_like (2-core CPU,
    one thread: F.dropout of 1500 x 256 forward and backward 2.75 ms, this 1.84 ms)."""
    if not training or p == 0:
        return x
    if not x.is_cpu:
        return F.dropout(x, p=p, training=True)
    return x * (torch.rand_like(x) >= p).to(x.dtype).mul_(1 / (1 - p))


def encoder_layer(
    x,
    keep,
    params,
    *,
    heads,
    eps,
    dropout_p,
    attention_dropout_p,
    activation_dropout_p,
    activation_fn,
    normalize_before,
    training,
    rows=None,
    read=None,
    linear=F.linear,
):
    """fairseq's TransformerEncoderLayer on batch-major x (B x T x C); ``keep`` is None or the
    B x 1 x 1 x T mask of the keys to attend to; ``params`` as ``layer_params`` returns them.
    With ``rows`` (RealTokens), x is the N x C matrix of the batch's real tokens, and with
    ``read`` (RealTokens.reading) the output is that of those rows only. ``linear`` runs the four
    projections (F.linear, or _float8.float8_linear's FP8 GEMMs)."""
    (q_w, q_b, k_w, k_b, v_w, v_b, out_w, out_b, attn_ln_w, attn_ln_b,
     fc1_w, fc1_b, fc2_w, fc2_b, final_ln_w, final_ln_b) = params  # fmt: skip
    width = x.size(-1)
    residual = x
    if normalize_before:
        x = F.layer_norm(x, (width,), attn_ln_w, attn_ln_b, eps)
    qkv = linear(x, torch.cat([q_w, k_w, v_w]), torch.cat([q_b, k_b, v_b]))
    attention_dropout_p = attention_dropout_p if training else 0.0
    if rows is None:
        attention = attend(qkv, keep, heads, attention_dropout_p)
    else:
        attention = rows.attend(qkv, heads, attention_dropout_p)
    if read is not None:
        attention, residual = attention.index_select(0, read), residual.index_select(0, read)
    x = linear(attention, out_w, out_b)
    x = residual + dropout(x, dropout_p, training)
    if not normalize_before:
        x = F.layer_norm(x, (width,), attn_ln_w, attn_ln_b, eps)
    residual = x
    if normalize_before:
        x = F.layer_norm(x, (width,), final_ln_w, final_ln_b, eps)
    x = dropout(activation_fn(linear(x, fc1_w, fc1_b)), activation_dropout_p, training)
    x = residual + dropout(linear(x, fc2_w, fc2_b), dropout_p, training)
    if not normalize_before:
        x = F.layer_norm(x, (width,), final_ln_w, final_ln_b, eps)
    return x


@functools.cache
def _compiled_layer(cuda_graphs: bool = False):
    """encoder_layer through torch.compile, made at the first use of the compiled path: making it
    imports torch._dynamo (a second of every start, on CPU too), which no other path needs. With
    ``cuda_graphs`` each static graph is also captured as a CUDA graph and replayed (torch.compile's
    reduce-overhead mode: one launch per layer instead of one per kernel)."""
    import torch._dynamo

    # One static graph per batch size, length bucket, padded or not, training or not and
    # architecture: a distillation run with validation has about ten, above torch's default
    # limit of 8 (past it, torch runs the layer uncompiled).
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    mode = "reduce-overhead" if cuda_graphs else None
    return torch.compile(encoder_layer, fullgraph=True, dynamic=False, mode=mode)


def compiled_encoder_layer(*args, cuda_graphs=False, **kwargs):
    """encoder_layer, each layer one static compiled graph (see _compiled_layer)."""
    return _compiled_layer(cuda_graphs)(*args, **kwargs)


def pad_to_bucket(src_tokens: torch.Tensor, padding_idx: int) -> torch.Tensor:
    """src_tokens right-padded to the next multiple of LENGTH_BUCKET tokens."""
    missing = -src_tokens.size(1) % LENGTH_BUCKET
    return F.pad(src_tokens, (0, missing), value=padding_idx) if missing else src_tokens


def layer_params(layer) -> tuple:
    """The tensors encoder_layer reads, from a fairseq TransformerEncoderLayer."""
    attn = layer.self_attn
    return (
        attn.q_proj.weight,
        attn.q_proj.bias,
        attn.k_proj.weight,
        attn.k_proj.bias,
        attn.v_proj.weight,
        attn.v_proj.bias,
        attn.out_proj.weight,
        attn.out_proj.bias,
        layer.self_attn_layer_norm.weight,
        layer.self_attn_layer_norm.bias,
        layer.fc1.weight,
        layer.fc1.bias,
        layer.fc2.weight,
        layer.fc2.bias,
        layer.final_layer_norm.weight,
        layer.final_layer_norm.bias,
    )


def unsupported(encoder) -> list:
    """What in this encoder's configuration the fused forward does not implement."""
    from fairseq.models.transformer import TransformerEncoder

    if not isinstance(encoder.sentence_encoder, TransformerEncoder):  # e.g. ModernBERT's
        return [f"{type(encoder.sentence_encoder).__name__} (fairseq's TransformerEncoder only)"]
    cfg = encoder.sentence_encoder.cfg
    problems = []
    if encoder.sentence_encoder.encoder_layerdrop > 0:
        problems.append("encoder_layerdrop > 0")
    if cfg.quant_noise.pq > 0:
        problems.append("quant_noise_pq > 0")
    if cfg.encoder.xformers_att_config:
        problems.append("xformers attention")
    if cfg.offload_activations:
        problems.append("offload_activations")
    return problems


class FusedRobertaEncoder(RobertaEncoder):
    """RobertaEncoder whose features and LM head run through encoder_layer (see module doc)."""

    implementation = "fused"
    cuda_graphs = False  # compiled layers replayed as CUDA graphs (use_fused_encoder)
    float8 = False  # the layers' projections as FP8 GEMMs (use_fused_encoder, _float8.py)

    def forward(
        self,
        src_tokens,
        features_only=False,
        return_all_hiddens=False,
        masked_tokens=None,
        has_padding=None,
        features_at=None,
        **unused,
    ):
        """fairseq's RobertaEncoder.forward; ``has_padding`` and ``features_at`` (see
        extract_features) and ``masked_tokens`` as a boolean mask or as flat positions (see
        output_layer) added."""
        x, extra = self.extract_features(
            src_tokens,
            return_all_hiddens=return_all_hiddens,
            has_padding=has_padding,
            features_at=features_at if features_only else None,
        )
        if not features_only:
            x = self.output_layer(x, masked_tokens=masked_tokens)
        return x, extra

    def extract_features(self, src_tokens, return_all_hiddens=False, **kwargs):
        """fairseq's features; ``has_padding``, when the caller knows it, spares the check of
        src_tokens for padding, a wait for the GPU (fairseq's encoder has one per layer);
        ``features_at``: the B x T mask of the positions the caller reads (the module doc)."""
        encoder = self.sentence_encoder
        length = src_tokens.size(1)
        compiled = self.implementation == "compiled"

        token_embeddings = kwargs.get("token_embeddings")
        has_padding = kwargs.get("has_padding")
        if compiled and token_embeddings is None:
            bucketed = pad_to_bucket(src_tokens, encoder.padding_idx)
            if bucketed is not src_tokens:
                has_padding, src_tokens = True, bucketed
        padding = src_tokens.eq(encoder.padding_idx)
        if has_padding is None:
            has_padding = bool(padding.any())
        # flash attention takes no mask: it only runs when the batch has no padding
        keep = ~padding[:, None, None, :] if has_padding else None
        x, _ = encoder.forward_embedding(src_tokens, token_embeddings)
        features_at = None if return_all_hiddens else kwargs.get("features_at")
        rows = read = None
        if self.implementation == "unpadded" and (keep is not None or features_at is not None):
            rows = RealTokens(padding, x.size(-1))
            x = rows.gather(x)
            read = None if features_at is None else rows.reading(features_at)
        elif keep is not None:
            x = x.masked_fill(padding.unsqueeze(-1), 0)
        states = [x] if return_all_hiddens else []
        layer_fn = compiled_encoder_layer if compiled else encoder_layer
        if compiled and self.cuda_graphs:
            layer_fn = functools.partial(compiled_encoder_layer, cuda_graphs=True)
        linear = float8_linear() if self.float8 else F.linear
        checkpointing = encoder.cfg.checkpoint_activations and self.training
        last = len(encoder.layers) - 1
        for number, layer in enumerate(encoder.layers):
            options = dict(
                heads=layer.self_attn.num_heads,
                eps=layer.final_layer_norm.eps,
                dropout_p=layer.dropout_module.p,
                attention_dropout_p=layer.self_attn.dropout_module.p,
                activation_dropout_p=layer.activation_dropout_module.p,
                activation_fn=layer.activation_fn,
                normalize_before=layer.normalize_before,
                training=self.training,
                rows=rows,
                read=read if number == last else None,
                linear=linear,
            )
            if checkpointing:
                x = torch.utils.checkpoint.checkpoint(
                    layer_fn, x, keep, layer_params(layer), **options, use_reentrant=False
                )
            else:
                x = layer_fn(x, keep, layer_params(layer), **options)
            if return_all_hiddens:
                states.append(x)
        if encoder.layer_norm is not None:
            x = encoder.layer_norm(x)
        if rows is not None:
            x, states = rows.scatter(x, read), [rows.scatter(state) for state in states]
        # the batch's own length again; fairseq's inner_states are T x B x C
        return x[:, :length], {
            "inner_states": [state[:, :length].transpose(0, 1) for state in states]
            if return_all_hiddens
            else None
        }

    def output_layer(self, features, masked_tokens=None, **unused):
        """RobertaLMHead with its output bias added inside the vocabulary GEMM. ``masked_tokens``
        is fairseq's boolean B x T mask or the same tokens' flat positions (row * T + column,
        ascending: the mask's order), which are gathered without a wait for the GPU."""
        head = self.lm_head
        return F.linear(lm_head_hidden(head, features, masked_tokens), head.weight, head.bias)


def lm_head_hidden(head, features, masked_tokens=None) -> torch.Tensor:
    """fairseq's RobertaLMHead up to its vocabulary projection (dense, activation, LayerNorm) on
    the rows ``masked_tokens`` selects: a boolean B x T mask or flat positions (row * T + col)."""
    if masked_tokens is not None and masked_tokens.dtype == torch.bool:
        features = features[masked_tokens, :]
    elif masked_tokens is not None:
        features = features.flatten(0, 1).index_select(0, masked_tokens)
    return head.layer_norm(head.activation_fn(head.dense(features)))


def fairseq_class(encoder) -> type:
    """The encoder's class before use_fused_encoder changed it."""
    return encoder.fairseq_class if isinstance(encoder, FusedRobertaEncoder) else type(encoder)


def replaceable(encoder_class: type) -> bool:
    """Whether the fused forward replaces this class's: fairseq's RobertaEncoder, or a subclass
    that only builds it otherwise (bert_encoder.py's)."""
    return issubclass(encoder_class, RobertaEncoder) and all(
        getattr(encoder_class, name) is getattr(RobertaEncoder, name)
        for name in ("forward", "extract_features", "output_layer")
    )


def fine_tuning_implementation(model, choice: str, cpu: bool) -> str:
    """The implementation a fine-tuning task's ``encoder_implementation`` choice means for this
    model: 'auto' is unpadded on the CPU where the fused forward implements the encoder (batches
    of sentences of varied lengths: measured in scripts/benchmark_finetune.py), fairseq's own
    elsewhere (other encoders; on a GPU, not measured yet)."""
    if choice != "auto":
        return choice
    encoder = getattr(model, "encoder", None)
    on_cpu = cpu or not torch.cuda.is_available()
    if on_cpu and replaceable(fairseq_class(encoder)) and not unsupported(encoder):
        return "unpadded"
    return "fairseq"


def use_fused_encoder(
    model, implementation: str, *, cuda_graphs: bool = False, float8: bool = False, cpu=False
) -> None:
    """Run a fairseq RoBERTa model's encoder through IMPLEMENTATION: 'fairseq' (unchanged), 'fused'
    or 'compiled' (fused, each layer through torch.compile). Parameters and state dict are
    unchanged; an encoder configuration the fused forward does not implement stays on fairseq's with
    a warning. ``cuda_graphs`` (compiled only) replays each compiled layer as a CUDA graph;
    ``float8`` runs the layers' projections as FP8 GEMMs (_float8.py): levers of the fused forward,
    refused where they cannot run (_encoder_levers.py; ``cpu``: the run is on the CPU)."""
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(
            f"encoder implementation {implementation!r}: choose one of {', '.join(IMPLEMENTATIONS)}"
        )
    encoder = model.encoder
    own = fairseq_class(encoder)
    if not replaceable(own):
        raise TypeError(
            f"the fused encoder replaces fairseq's RobertaEncoder, not {type(encoder).__name__}"
        )
    if implementation == "fairseq":
        check_levers(implementation, [], cuda_graphs=cuda_graphs, float8=float8, cpu=cpu)
        encoder.__class__ = own
        return
    problems = unsupported(encoder)
    check_levers(implementation, problems, cuda_graphs=cuda_graphs, float8=float8, cpu=cpu)
    if problems:
        logger.warning(
            "encoder stays on fairseq's implementation: the fused one has no %s",
            ", ".join(problems),
        )
        return
    if float8:
        float8_linear()  # torchao is there (or a one-line error says what to install)
    encoder.fairseq_class = own
    encoder.__class__ = FusedRobertaEncoder
    encoder.implementation = implementation
    encoder.cuda_graphs, encoder.float8 = cuda_graphs, float8
    if not hasattr(model, "first_position_hook") and hasattr(model, "classification_heads"):
        model.first_position_hook = model.register_forward_pre_hook(
            sentence_heads_read_first_position, with_kwargs=True
        )
    logger.info(
        "RoBERTa encoder: %s implementation%s%s",
        implementation,
        ", CUDA graphs" if cuda_graphs else "",
        ", FP8 projections" if float8 else "",
    )

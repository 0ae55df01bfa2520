"""diffusers' own regional compilation: which model classes name repeated blocks, and how
``compile_repeated_blocks()`` compiles them.

diffusers is not a dependency here (static lint never imports it; trace reads the attribute on
the live model). Facts read from diffusers' released source: the wheels of diffusers 0.34.0,
0.35.0 and 0.42.1 (the newest release when this was written), fetched with ``pip download``,
and huggingface/diffusers ``src/diffusers/models/modeling_utils.py`` (commit 3782ec44) in the
stored code. Every model class of 0.42.1 that sets ``_repeated_blocks`` is listed below with the
file and line of the assignment; no 0.42.1 class inherits a non-empty list without setting it.
"""

from __future__ import annotations

#: ``ModelMixin.compile_repeated_blocks(*args, **kwargs)`` (modeling_utils.py, 0.35.0 line 1448;
#: absent from 0.34.0): ``for submod in self.modules(): if submod.__class__.__name__ in
#: repeated_blocks: submod.compile(*args, **kwargs)``. Every instance of every named class is
#: compiled in place wherever it sits (a UNet's blocks sit in ``down_blocks[i].attentions[j]``,
#: ``mid_block``, ``up_blocks[i]``, not in one container); the keywords go to ``torch.compile``.
#: It raises ``ValueError`` when ``_repeated_blocks`` is empty ("`_repeated_blocks` attribute is
#: empty") and when no submodule has a named class ("Regional compilation failed because ...").
COMPILE_REPEATED_BLOCKS = "compile_repeated_blocks"
#: The first diffusers release with ``compile_repeated_blocks`` (0.34.0 has neither it nor
#: ``_repeated_blocks``).
COMPILE_REPEATED_BLOCKS_SINCE = "0.35.0"
#: The release the table below was read from.
LISTED_FROM = "0.42.1"
#: The class attribute naming a model's repeated block classes (``ModelMixin._repeated_blocks = []``,
#: read by ``getattr(self, "_repeated_blocks", None)``, so an instance attribute counts too).
REPEATED_BLOCKS_ATTRIBUTE = "_repeated_blocks"

#: Model class -> the block classes its ``_repeated_blocks`` names, in diffusers 0.42.1
#: (path under ``src/diffusers/models/`` and line; "since 0.35.0": already so in 0.35.0).
DIFFUSERS_REPEATED_BLOCKS: dict[str, tuple[str, ...]] = {
    "AnyFlowFARTransformer3DModel": ("AnyFlowTransformerBlock",),  # transformers/transformer_anyflow_far.py:1024
    "AnyFlowTransformer3DModel": ("AnyFlowTransformerBlock",),  # transformers/transformer_anyflow.py:557
    "AutoencoderKLMiniMaxH3": ("MiniMaxH3VideoTransformerBlock",),  # autoencoders/autoencoder_kl_minimax_h3.py:531
    "BriaFibo2Transformer2DModel": ("BriaFibo2TransformerBlock",),  # transformers/transformer_bria_fibo2.py:433
    "BriaFiboTransformer2DModel": (
        "BriaFiboTransformerBlock",
        "BriaFiboSingleTransformerBlock",
    ),  # transformers/transformer_bria_fibo.py:444
    "ChromaTransformer2DModel": (
        "ChromaTransformerBlock",
        "ChromaSingleTransformerBlock",
    ),  # transformers/transformer_chroma.py:397 (since 0.35.0)
    "ChronoEditTransformer3DModel": ("WanTransformerBlock",),  # transformers/transformer_chronoedit.py:567
    "Cosmos3OmniTransformer": ("Cosmos3VLTextMoTDecoderLayer",),  # transformers/transformer_cosmos3.py:377
    "DreamLiteUNetModel": ("BasicTransformerBlockDreamLite",),  # unets/unet_dreamlite.py:1600
    "ErnieImageTransformer2DModel": ("ErnieImageSharedAdaLNBlock",),  # transformers/transformer_ernie_image.py:298
    "Flux2Transformer2DModel": (
        "Flux2TransformerBlock",
        "Flux2SingleTransformerBlock",
    ),  # transformers/transformer_flux2.py:1102
    "Flux3Transformer2DModel": (
        "Flux3ModeTransformerBlock",
        "Flux3SingleTransformerBlock",
    ),  # transformers/transformer_flux3.py:389
    "FluxTransformer2DModel": (
        "FluxTransformerBlock",
        "FluxSingleTransformerBlock",
    ),  # transformers/transformer_flux.py:572 (since 0.35.0)
    "GlmImageTransformer2DModel": ("GlmImageTransformerBlock",),  # transformers/transformer_glm_image.py:536
    "HeliosTransformer3DModel": ("HeliosTransformerBlock",),  # transformers/transformer_helios.py:559
    "HunyuanImageTransformer2DModel": (
        "HunyuanImageTransformerBlock",
        "HunyuanImageSingleTransformerBlock",
    ),  # transformers/transformer_hunyuanimage.py:670
    "HunyuanVideo15Transformer3DModel": (
        "HunyuanVideo15TransformerBlock",
        "HunyuanVideo15PatchEmbed",
        "HunyuanVideo15TokenRefiner",
    ),  # transformers/transformer_hunyuan_video15.py:556
    "HunyuanVideoTransformer3DModel": (
        "HunyuanVideoTransformerBlock",
        "HunyuanVideoSingleTransformerBlock",
        "HunyuanVideoPatchEmbed",
        "HunyuanVideoTokenRefiner",
    ),  # transformers/transformer_hunyuan_video.py:896 (since 0.35.0)
    "Ideogram4Transformer2DModel": ("Ideogram4TransformerBlock",),  # transformers/transformer_ideogram4.py:313
    "JoyImageEditPlusTransformer3DModel": (
        "JoyImageEditPlusTransformerBlock",
    ),  # transformers/transformer_joyimage_edit_plus.py:360
    "JoyImageEditTransformer3DModel": ("JoyImageTransformerBlock",),  # transformers/transformer_joyimage.py:387
    "Kandinsky5Transformer3DModel": (
        "Kandinsky5TransformerEncoderBlock",
        "Kandinsky5TransformerDecoderBlock",
    ),  # transformers/transformer_kandinsky.py:522
    "Kandinsky6SRTransformer3DModel": (
        "Kandinsky6SRTransformerBlock",
    ),  # transformers/transformer_kandinsky6_sr.py:453
    "Kandinsky6Transformer3DModel": (
        "Kandinsky6TransformerEncoderBlock",
        "Kandinsky6FusedTransformerDecoderBlock",
    ),  # transformers/transformer_kandinsky6.py:640
    "Krea2Transformer2DModel": ("Krea2TransformerBlock",),  # transformers/transformer_krea2.py:387
    "LTX2VideoTransformer3DModel": ("LTX2VideoTransformerBlock",),  # transformers/transformer_ltx2.py:1124
    "LTXVideoTransformer3DModel": ("LTXVideoTransformerBlock",),  # transformers/transformer_ltx.py:416 (since 0.35.0)
    "LongCatAudioDiTTransformer": ("AudioDiTBlock",),  # transformers/transformer_longcat_audio_dit.py:457
    "LongCatImageTransformer2DModel": (
        "LongCatImageTransformerBlock",
        "LongCatImageSingleTransformerBlock",
    ),  # transformers/transformer_longcat_image.py:408
    "MiniMaxH3Transformer3DModel": (
        "MiniMaxH3TransformerBlock",
        "MiniMaxH3TokenRefinerBlock",
    ),  # transformers/transformer_minimax_h3.py:440
    "MiniMaxMusic3Transformer1DModel": (
        "MiniMaxMusic3TransformerBlock",
    ),  # transformers/transformer_minimax_music3.py:159
    "MotifVideoTransformer3DModel": (
        "MotifVideoSingleTransformerBlock",
        "MotifVideoTransformerBlock",
    ),  # transformers/transformer_motif_video.py:771
    "NucleusMoEImageTransformer2DModel": (
        "NucleusMoEImageTransformerBlock",
    ),  # transformers/transformer_nucleusmoe_image.py:773
    "OvisImageTransformer2DModel": (
        "OvisImageTransformerBlock",
        "OvisImageSingleTransformerBlock",
    ),  # transformers/transformer_ovis_image.py:421
    "QwenImage21Transformer2DModel": ("QwenImage21TransformerBlock",),  # transformers/transformer_qwenimage21.py:762
    "QwenImageTransformer2DModel": (
        "QwenImageTransformerBlock",
    ),  # transformers/transformer_qwenimage.py:779 (since 0.35.0)
    "RFD4ProteinaAutoencoder": ("RFD4ProteinaTrunkLayer",),  # autoencoders/autoencoder_rfd4_proteina.py:524
    "RFD4ProteinaTransformer": (
        "RFD4ProteinaTrunkLayer",
        "RFD4ProteinaPairUpdate",
    ),  # transformers/transformer_rfd4_proteina.py:941
    "SanaWMLTX2RefinerTransformer3DModel": (
        "SanaWMLTX2RefinerTransformerBlock",
    ),  # transformers/transformer_sana_wm_refiner.py:1167
    "SanaWMTransformer3DModel": ("SanaVideoMSCamCtrlBlock",),  # transformers/transformer_sana_wm.py:2702
    "SkyReelsV2Transformer3DModel": ("SkyReelsV2TransformerBlock",),  # transformers/transformer_skyreels_v2.py:568
    "StableAudio3DiTModel": ("StableAudio3DiTBlock",),  # transformers/transformer_stable_audio3.py:436
    "UNet2DConditionModel": ("BasicTransformerBlock",),  # unets/unet_2d_condition.py:175 (since 0.35.0)
    "WanAnimate2Transformer3DModel": ("WanAnimate2TransformerBlock",),  # transformers/transformer_wan_animate_2.py:620
    "WanAnimateTransformer3DModel": ("WanTransformerBlock",),  # transformers/transformer_wan_animate.py:1038
    "WanTransformer3DModel": ("WanTransformerBlock",),  # transformers/transformer_wan.py:551 (since 0.35.0)
    "WanVACETransformer3DModel": (
        "WanTransformerBlock",
        "WanVACETransformerBlock",
    ),  # transformers/transformer_wan_vace.py:182
    "ZImageTransformer2DModel": ("ZImageTransformerBlock",),  # transformers/transformer_z_image.py:364
}

#: Pipeline components that are such models (``pipe.transformer``, ``pipe.unet``).
DIFFUSERS_DENOISERS = ("transformer", "unet")
DIFFUSERS_PIPELINE_SUFFIX = "Pipeline"


def repeated_blocks_of(model_class: str) -> tuple[str, ...]:
    """The block classes diffusers' ``model_class`` compiles with ``compile_repeated_blocks()``
    (empty for a class that names none, or one this table does not know)."""
    return DIFFUSERS_REPEATED_BLOCKS.get(model_class, ())

"""Model families side by side, all built from transformer.layers and the one attention core:
gpt (our checkpoints, GPT-2, and Llama through its own converter), bert (encoder), seq2seq (translator)."""

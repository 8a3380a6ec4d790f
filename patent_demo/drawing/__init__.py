"""Drawing retrieval (HMCL): sheets, transforms, encoders, the batch sampler, embedding, fine-tuning
helpers and the one drawing-evaluation protocol. Image reading is ``patent_demo.imageio``, the vector index
``patent_demo.index``, the HMCL loss ``patent_demo.losses.hmcl``."""

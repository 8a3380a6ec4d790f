"""Drawing retrieval (HMCL): image I/O, transforms, encoders, the batch sampler, embedding, the FAISS
index, fine-tuning helpers and the one drawing-evaluation protocol. The HMCL loss lives in
``patent_demo.losses.hmcl``."""

"""The pages' cached computations, one module per page group. Each calls a lessons/ computation and a figures/ builder;
no math here.

They live here, not in the page files: a cached function defined in a page is made anew on every run, and Streamlit
hashes its source each time (~1–2 ms per function per rerun). Building a figure costs far more than sending it, so
figures are cached per input.

A function that reads a trace takes its key (ui.models.TraceKey: model, text, interventions) and fetches the trace
itself with get_trace(key) from the shared trace cache, so its arguments alone fix its result.
"""

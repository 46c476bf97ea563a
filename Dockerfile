FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# pg_dump and pg_restore for `manage.py backup` and `restore`: their major version must be
# at least the server's (PostgreSQL 15 in the compose stack; Debian's client is 15 or later).
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-client \
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN RUN_MODE=embedded VAR_DIR=/tmp/build python manage.py collectstatic --no-input -v 0
EXPOSE 8000
# The web server is web/serve.py (granian; workers, threads, keep-alive spreading, all
# from the environment: WEB_*); the container listens on every interface. Two workers, a
# 2-core host's default: inside a container the default (one per core) would count the
# host's cores, not the container's share (each worker thread holds a database
# connection). Set WEB_WORKERS to the cores the container has.
ENV WEB_BIND=0.0.0.0:8000 WEB_WORKERS=2
CMD ["python", "-m", "web.serve"]

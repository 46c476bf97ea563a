"""The sampling batch admin's create URL and form data."""

CREATE_URL = "/admin/sampling/samplingbatch/create/"


def form_data(split, **extra):
    data = {"split": split.pk, "k": 1, "ratings_per_pair": 5, "seed": 0, "priority": 0, "start": "on"}
    data.update(extra)
    return data

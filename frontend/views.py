from django.shortcuts import render

from annotation.selectors import dataset_list
from config.runtime import describe_mode


def home(request):
    return render(request, "frontend/home.html", {"mode": describe_mode(), "datasets": dataset_list()})

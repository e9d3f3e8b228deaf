"""Where each part of the one import package ``resharpen`` lives in the checkout.

``resharpen/`` holds the front (command line, claims, API); the four top-level folders of the
design install beneath it: ``theory/`` as ``resharpen.theory``, ``constructions/`` as
``resharpen.constructions``, ``experiments/`` as ``resharpen.experiments`` and ``paper_figs/`` as
``resharpen.paper_figs``. Everything else (metadata, dependencies, package data) is in
pyproject.toml.
"""
from setuptools import find_packages, setup

FOLDERS = ("theory", "constructions", "experiments", "paper_figs")

packages = ["resharpen"]
package_dir = {"resharpen": "resharpen"}
for folder in FOLDERS:
    package_dir[f"resharpen.{folder}"] = folder
    packages += [f"resharpen.{folder}"] + [f"resharpen.{folder}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=package_dir)

"""Reproduction plans and what turns their finished cells into verdicts.

A plan (:mod:`~rllib_fair.reproduce.plan`) holds the cells, protocol, paper values and
claims of a paper's figure or table; :mod:`~rllib_fair.reproduce.evaluators` the
evaluation protocols; :mod:`~rllib_fair.reproduce.stats` the statistics behind every
verdict; :mod:`~rllib_fair.reproduce.merge` the tables, claims and figures.
``rllib-fair reproduce PLAN`` (:mod:`rllib_fair.cli.reproduce`) runs a plan's cells as
Ray Tune trials.
"""

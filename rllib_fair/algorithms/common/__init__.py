"""Helpers shared by several algorithm folders (no algorithm of its own).

* :mod:`.setters`: :func:`~.setters.set_provided`, the one setter every config's
  ``training()`` uses (RLlib's ``NotProvided`` convention);
* :mod:`.advantages`: per-minibatch min-max normalisation and A-PPO's advantage terms
  (POCAR, F-PPO-L, SELLF);
* :mod:`.model_env`: the env model that planning baselines rebuild from the env id
  (the myopic baselines, L-UCBFair);
* :mod:`.connectors`: the qualification-gain columns of the Lear & Zhang family (PPO-C,
  F-PPO-L);
* :mod:`.torch.no_op_torch_learner`: the learner of algorithms that never train a torch
  module (the myopic baselines, L-UCBFair, the lending strategies);
* :mod:`.torch.update_means`: a learner mixin logging statistics averaged over an
  update's minibatches (PPO-C, F-PPO-L).

An algorithm folder imports from here, never a helper from a sibling folder; subclassing a
sibling's public config, algorithm or learner class is the one cross-folder import.
"""

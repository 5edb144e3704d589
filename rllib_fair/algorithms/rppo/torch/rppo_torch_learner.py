"""R-PPO torch learner: PPO's, with the reward shaping inserted in front of GAE."""

from __future__ import annotations

from ray.rllib.connectors.learner import GeneralAdvantageEstimation
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import FairPPOTorchLearner
from rllib_fair.algorithms.rppo.connectors import ShapeRewardsWithDisparity


class RPPOTorchLearner(FairPPOTorchLearner):
    """PPO torch learner whose pipeline shapes rewards before GAE."""

    @override(FairPPOTorchLearner)
    def build(self) -> None:
        """Builds PPO's learner, then inserts the reward shaping in front of GAE."""
        super().build()
        if self._learner_connector is not None:
            self._learner_connector.insert_before(
                GeneralAdvantageEstimation,
                ShapeRewardsWithDisparity(
                    zeta_1=self.config.zeta_1,
                    omega=self.config.omega,
                    form=self.config.penalty_form,
                ),
            )

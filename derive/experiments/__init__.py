"""The paper's experiments (training, Hopfield capacity, distribution shift) and the NIST StRD tools."""

from .paper import (
    TrainingConfig,
    distribution_shift,
    hopfield_capacity,
    hopfield_updates,
    reproduce,
    train,
    training_gradients,
    training_loss_expression,
)

__all__ = ["TrainingConfig", "distribution_shift", "hopfield_capacity", "hopfield_updates", "reproduce", "train",
           "training_gradients", "training_loss_expression"]

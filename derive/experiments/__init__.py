"""The paper's experiments (training, Hopfield capacity, distribution shift), their figures and the NIST StRD tools."""

from .paper import (
    QUICK_CAPACITY,
    CapacityConfig,
    TrainingConfig,
    distribution_shift,
    hopfield_capacity,
    hopfield_updates,
    linear_fit,
    provenance,
    reproduce,
    train,
    training_gradients,
    training_loss_expression,
)

__all__ = ["QUICK_CAPACITY", "CapacityConfig", "TrainingConfig", "distribution_shift", "hopfield_capacity",
           "hopfield_updates", "linear_fit", "provenance", "reproduce", "train", "training_gradients",
           "training_loss_expression"]

"""`local_layers` of upstream's partial-reduction APIs (PartialDistributedOptimizer,
PartialDistributedGradientTape): the layers whose trainable weights each rank
keeps local instead of reducing."""
import keras


def local_layer_list(local_layers):
    """local_layers (None, a keras Layer or an iterable of them) as a list;
    ValueError naming upstream's requirement for anything else."""
    if local_layers is None:
        return []
    if isinstance(local_layers, keras.layers.Layer):
        return [local_layers]
    local_layers = list(local_layers)
    if not all(isinstance(layer, keras.layers.Layer) for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
    return local_layers

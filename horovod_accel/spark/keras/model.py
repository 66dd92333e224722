"""KerasModel (upstream's horovod.spark.keras.KerasModel): a trained Keras 3
model as a Spark Transformer; `getModel()` is the keras.Model (compiled,
optimizer state included, learning rate of one process), `getHistory()`
{metric: [value per epoch]}."""
from pyspark import keyword_only
from pyspark.ml.param.shared import Param, Params

from horovod_accel.spark.common.estimator import HorovodModel
from horovod_accel.spark.keras import checkpoint as ckpt_mod


class KerasModel(HorovodModel):
    """Spark Transformer wrapping a trained Keras model; transform(df) adds
    `<label>__output` columns (see HorovodModel.transform)."""
    custom_objects = Param(Params._dummy(), "custom_objects", "custom objects")  # noqa: SLF001
    _floatx = Param(Params._dummy(), "_floatx", "keras default float type")  # noqa: SLF001

    @keyword_only
    def __init__(self, history=None, model=None, feature_columns=None, label_columns=None,
                 custom_objects=None, run_id=None, _metadata=None, _floatx=None):
        super().__init__()
        if label_columns:
            self.setOutputCols([col + "__output" for col in label_columns])
        self._setDefault(custom_objects={}, _floatx=None)
        self.setParams(**self._input_kwargs)

    def setCustomObjects(self, value):  # noqa: N802 - upstream's names
        return self._set(custom_objects=value)

    def getCustomObjects(self):  # noqa: N802
        return self.getOrDefault(self.custom_objects)

    def _get_floatx(self):
        return self.getOrDefault(self._floatx)

    def _predictor(self):
        return KerasPredictor(ckpt_mod.model_bytes(self.getModel()), self.getCustomObjects(),
                              self._get_floatx())


class KerasPredictor:
    """Picklable predict function (transform.py's contract): the model
    travels as Keras file bytes and is loaded (uncompiled) once per process
    that uses it; inputs are reshaped to the model's inputs, in floatx."""

    def __init__(self, model_bytes, custom_objects, floatx):
        self.model_bytes = model_bytes
        self.custom_objects = custom_objects or {}
        self.floatx = floatx
        self._model = None

    def __getstate__(self):
        return {**self.__dict__, "_model": None}

    def __call__(self, features):
        import keras  # noqa: PLC0415
        import numpy as np  # noqa: PLC0415
        if self.floatx:
            keras.backend.set_floatx(self.floatx)
        if self._model is None:
            with keras.utils.custom_object_scope(self.custom_objects):
                self._model = ckpt_mod.load_model(self.model_bytes, keras.models.load_model,
                                                  custom_objects=self.custom_objects,
                                                  compile=False)
        shapes = [[-1, *t.shape[1:]] for t in self._model.inputs]
        dtype = keras.backend.floatx()
        xs = [np.asarray(f, dtype=dtype).reshape(s) for f, s in zip(features, shapes)]
        outputs = self._model.predict_on_batch(xs[0] if len(xs) == 1 else xs)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        return [keras.ops.convert_to_numpy(o) for o in outputs]

"""TorchModel (upstream's horovod.spark.torch.TorchModel): a trained PyTorch
model as a Spark Transformer; `getModel()` is the torch.nn.Module,
`getHistory()` the metrics of every epoch, `getOptimizer()` the optimizer
with its trained state (learning rate of one process)."""
from pyspark import keyword_only
from pyspark.ml.param.shared import Param, Params

from horovod_accel.spark.common.estimator import HorovodModel


class TorchModel(HorovodModel):
    """Spark Transformer wrapping a trained PyTorch model; transform(df) adds
    `<label>__output` columns (see HorovodModel.transform)."""
    optimizer = Param(Params._dummy(), "optimizer", "optimizer")  # noqa: SLF001
    input_shapes = Param(Params._dummy(), "input_shapes", "input layer shapes")  # noqa: SLF001
    loss = Param(Params._dummy(), "loss", "loss")  # noqa: SLF001
    loss_constructors = Param(Params._dummy(), "loss_constructors",  # noqa: SLF001
                              "functions that construct the loss")

    @keyword_only
    def __init__(self, history=None, model=None, feature_columns=None, input_shapes=None,
                 label_columns=None, optimizer=None, run_id=None, _metadata=None, loss=None,
                 loss_constructors=None):
        super().__init__()
        if label_columns:
            self.setOutputCols([col + "__output" for col in label_columns])
        self._setDefault(optimizer=None, loss=None, loss_constructors=None, input_shapes=None)
        self.setParams(**self._input_kwargs)

    def setLoss(self, value):  # noqa: N802 - upstream's names
        return self._set(loss=value)

    def getLoss(self):  # noqa: N802
        return self.getOrDefault(self.loss)

    def setLossConstructors(self, value):  # noqa: N802
        return self._set(loss_constructors=value)

    def getLossConstructors(self):  # noqa: N802
        return self.getOrDefault(self.loss_constructors)

    def setInputShapes(self, value):  # noqa: N802
        return self._set(input_shapes=value)

    def getInputShapes(self):  # noqa: N802
        return self.getOrDefault(self.input_shapes)

    def setOptimizer(self, value):  # noqa: N802
        return self._set(optimizer=value)

    def getOptimizer(self):  # noqa: N802
        return self.getOrDefault(self.optimizer)

    def _predictor(self):
        import cloudpickle  # noqa: PLC0415
        return TorchPredictor(cloudpickle.dumps(self.getModel()), self.getInputShapes())


class TorchPredictor:
    """Picklable predict function (transform.py's contract): the model
    travels as bytes and is loaded once per process that uses it; inputs
    are float32 tensors reshaped to input_shapes; runs on the CPU."""

    def __init__(self, model_bytes, input_shapes):
        self.model_bytes = model_bytes
        self.input_shapes = input_shapes
        self._model = None

    def __getstate__(self):
        return {"model_bytes": self.model_bytes, "input_shapes": self.input_shapes,
                "_model": None}

    def __call__(self, features):
        import pickle  # noqa: PLC0415

        import torch  # noqa: PLC0415
        if self._model is None:
            self._model = pickle.loads(self.model_bytes).cpu().eval()
        inputs = [torch.as_tensor(f, dtype=torch.float32).reshape(shape)
                  for f, shape in zip(features, self.input_shapes)]
        with torch.no_grad():
            outputs = self._model(*inputs)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        return [o.detach().cpu().numpy() for o in outputs]

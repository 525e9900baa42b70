module @jit_outer_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32x32x32xf32>) -> (tensor<32x32x32xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<100x32x32x32xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %c, %iterArg_4 = %arg0, %iterArg_5 = %0) : tensor<i32>, tensor<32x32x32xf32>, tensor<100x32x32x32xf32>
    cond {
      %c_6 = stablehlo.constant dense<100> : tensor<i32>
      %12 = stablehlo.compare LT, %iterArg, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %12 : tensor<i1>
    } do {
      %12:2 = func.call @closed_call(%iterArg_4) : (tensor<32x32x32xf32>) -> (tensor<32x32x32xf32>, tensor<32x32x32xf32>)
      %13 = func.call @dynamic_update_index_in_dim(%iterArg_5, %12#1, %iterArg) : (tensor<100x32x32x32xf32>, tensor<32x32x32xf32>, tensor<i32>) -> tensor<100x32x32x32xf32>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %14 = stablehlo.add %iterArg, %c_6 : tensor<i32>
      stablehlo.return %14, %12#0, %13 : tensor<i32>, tensor<32x32x32xf32>, tensor<100x32x32x32xf32>
    }
    %2 = stablehlo.slice %1#2 [99:100, 0:32, 0:32, 0:32] : (tensor<100x32x32x32xf32>) -> tensor<1x32x32x32xf32>
    %3 = stablehlo.reshape %2 : (tensor<1x32x32x32xf32>) -> tensor<32x32x32xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<100x32x32x32xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5:3 = stablehlo.while(%iterArg = %c_1, %iterArg_4 = %3, %iterArg_5 = %4) : tensor<i32>, tensor<32x32x32xf32>, tensor<100x32x32x32xf32>
    cond {
      %c_6 = stablehlo.constant dense<100> : tensor<i32>
      %12 = stablehlo.compare LT, %iterArg, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %12 : tensor<i1>
    } do {
      %12:2 = func.call @closed_call_4(%iterArg_4) : (tensor<32x32x32xf32>) -> (tensor<32x32x32xf32>, tensor<32x32x32xf32>)
      %13 = func.call @dynamic_update_index_in_dim(%iterArg_5, %12#1, %iterArg) : (tensor<100x32x32x32xf32>, tensor<32x32x32xf32>, tensor<i32>) -> tensor<100x32x32x32xf32>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %14 = stablehlo.add %iterArg, %c_6 : tensor<i32>
      stablehlo.return %14, %12#0, %13 : tensor<i32>, tensor<32x32x32xf32>, tensor<100x32x32x32xf32>
    }
    %6 = stablehlo.slice %5#2 [99:100, 0:32, 0:32, 0:32] : (tensor<100x32x32x32xf32>) -> tensor<1x32x32x32xf32>
    %7 = stablehlo.reshape %6 : (tensor<1x32x32x32xf32>) -> tensor<32x32x32xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<100x32x32x32xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9:3 = stablehlo.while(%iterArg = %c_3, %iterArg_4 = %7, %iterArg_5 = %8) : tensor<i32>, tensor<32x32x32xf32>, tensor<100x32x32x32xf32>
    cond {
      %c_6 = stablehlo.constant dense<100> : tensor<i32>
      %12 = stablehlo.compare LT, %iterArg, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %12 : tensor<i1>
    } do {
      %12:2 = func.call @closed_call_7(%iterArg_4) : (tensor<32x32x32xf32>) -> (tensor<32x32x32xf32>, tensor<32x32x32xf32>)
      %13 = func.call @dynamic_update_index_in_dim(%iterArg_5, %12#1, %iterArg) : (tensor<100x32x32x32xf32>, tensor<32x32x32xf32>, tensor<i32>) -> tensor<100x32x32x32xf32>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %14 = stablehlo.add %iterArg, %c_6 : tensor<i32>
      stablehlo.return %14, %12#0, %13 : tensor<i32>, tensor<32x32x32xf32>, tensor<100x32x32x32xf32>
    }
    %10 = stablehlo.slice %9#2 [99:100, 0:32, 0:32, 0:32] : (tensor<100x32x32x32xf32>) -> tensor<1x32x32x32xf32>
    %11 = stablehlo.reshape %10 : (tensor<1x32x32x32xf32>) -> tensor<32x32x32xf32>
    return %11 : tensor<32x32x32xf32>
  }
  func.func private @closed_call(%arg0: tensor<32x32x32xf32>) -> (tensor<32x32x32xf32>, tensor<32x32x32xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<32x32x32xf32>
    %1 = stablehlo.cosine %0 : tensor<32x32x32xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<32x32x32xf32>
    %3 = stablehlo.add %2, %1 : tensor<32x32x32xf32>
    return %3, %3 : tensor<32x32x32xf32>, tensor<32x32x32xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<100x32x32x32xf32>, %arg1: tensor<32x32x32xf32>, %arg2: tensor<i32>) -> tensor<100x32x32x32xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2, 3] : (tensor<32x32x32xf32>) -> tensor<1x32x32x32xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0, %c_1 : (tensor<100x32x32x32xf32>, tensor<1x32x32x32xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<100x32x32x32xf32>
    return %1 : tensor<100x32x32x32xf32>
  }
  func.func private @closed_call_4(%arg0: tensor<32x32x32xf32>) -> (tensor<32x32x32xf32>, tensor<32x32x32xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<32x32x32xf32>
    %1 = stablehlo.cosine %0 : tensor<32x32x32xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<32x32x32xf32>
    %3 = stablehlo.add %2, %1 : tensor<32x32x32xf32>
    return %3, %3 : tensor<32x32x32xf32>, tensor<32x32x32xf32>
  }
  func.func private @closed_call_7(%arg0: tensor<32x32x32xf32>) -> (tensor<32x32x32xf32>, tensor<32x32x32xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<32x32x32xf32>
    %1 = stablehlo.cosine %0 : tensor<32x32x32xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<32x32x32xf32>
    %3 = stablehlo.add %2, %1 : tensor<32x32x32xf32>
    return %3, %3 : tensor<32x32x32xf32>, tensor<32x32x32xf32>
  }
}
